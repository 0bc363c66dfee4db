// Sentence embeddings from a model folder, and their cosine similarities.
#include <cstdio>
#include <string>
#include <vector>

#include "roberta/roberta.h"

int main(int argc, char** argv) {
  const roberta::Embedder embed = roberta::Embedder::load(argc > 1 ? argv[1] : "models/demo");
  const std::vector<std::string> texts{"The weather is lovely today.", "It is sunny outside.",
                                       "He drove to the stadium."};
  const roberta::Matrix e = embed(texts, {.normalize = true});  // (3, hidden), unit length
  for (size_t i = 0; i < e.rows; ++i)
    for (size_t j = 0; j < e.rows; ++j) {
      float dot = 0;
      for (size_t k = 0; k < e.cols; ++k) dot += e.row(i)[k] * e.row(j)[k];
      std::printf("%.4f%c", dot, j + 1 < e.rows ? ' ' : '\n');
    }
}
