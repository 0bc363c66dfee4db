// Built against the installed package: tokenizes a text with the tokenizer folder given.
#include <iostream>

#include "roberta/roberta.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: consumer TOKENIZER_DIR TEXT\n";
    return 2;
  }
  try {
    const roberta::Tokenizer tok = roberta::Tokenizer::from_dir(argv[1]);
    for (int32_t id : tok.encode(argv[2]).ids) std::cout << id << " ";
    std::cout << "\n";
  } catch (const roberta::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
