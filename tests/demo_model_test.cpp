// The shipped demo model (models/demo) must make plausible predictions. The sentences and the
// words accepted for each were written before looking at the model's answers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "roberta/pipelines.h"

namespace {

struct Case {
  const char* text;
  std::set<std::string> plausible;
};

const Case kCases[] = {
    {"She opened the <mask> and looked out into the garden.",
     {"door", "window", "gate", "shutters", "curtains", "blinds", "casement", "windows", "doors", "shutter"}},
    {"He put on his <mask> and went out into the rain.",
     {"hat", "coat", "cloak", "boots", "cap", "overcoat", "gloves", "shoes", "clothes", "mackintosh", "shawl"}},
    {"The old man sat by the <mask> and warmed his hands.",
     {"fire", "fireside", "stove", "hearth", "fireplace", "blaze", "grate", "window", "chimney"}},
    {"It was a dark and stormy <mask>.", {"night", "evening", "day", "morning", "afternoon", "sky", "winter"}},
    {"She wrote a long <mask> to her sister.",
     {"letter", "note", "epistle", "message", "account", "poem", "story", "reply", "answer", "telegram"}},
    {"They walked slowly down the <mask> towards the village.",
     {"road", "lane", "hill", "path", "street", "avenue", "track", "valley", "way", "slope", "stairs", "river", "steps"}},
    {"The ship sailed across the <mask>.",
     {"sea", "ocean", "bay", "channel", "water", "waters", "river", "lake", "harbour", "harbor", "atlantic", "pacific",
      "waves", "sound", "deck", "world", "gulf", "strait", "straits", "seas", "coast", "island", "horizon"}},
    {"He drank a cup of <mask> before going to bed.",
     {"tea", "coffee", "wine", "water", "milk", "chocolate", "cocoa", "ale", "beer", "brandy", "soup", "broth", "sherry",
      "whisky", "whiskey", "gin", "rum", "port"}},
    {"The king sat upon his <mask>.", {"throne", "horse", "chair", "seat", "bed", "couch", "steed", "knees", "stool"}},
    {"The children played in the <mask> all afternoon.",
     {"garden", "park", "field", "fields", "yard", "street", "streets", "woods", "wood", "sun", "snow", "house", "room",
      "meadow", "nursery", "sand", "water", "grass", "orchard", "court", "square", "village", "forest", "river",
      "meadows", "hall", "sunshine", "courtyard", "lane", "road", "barn", "kitchen"}},
};

std::string normalise(std::string word) {
  word.erase(0, word.find_first_not_of(' '));
  std::transform(word.begin(), word.end(), word.begin(), [](unsigned char c) { return std::tolower(c); });
  return word;
}

TEST(DemoModel, PlausibleWordInTopFiveForAtLeastEightOfTen) {
  const roberta::FillMask fill = roberta::FillMask::load(ROBERTA_DEMO_MODEL);
  int plausible = 0;
  for (const Case& c : kCases) {
    const auto candidates = fill(c.text).at(0);
    bool found = false;
    std::string shown;
    for (const auto& cand : candidates) {
      shown += " [" + cand.token_str + "]";
      found = found || c.plausible.count(normalise(cand.token_str)) > 0;
    }
    std::printf("  %s %s:%s\n", found ? "yes" : "no ", c.text, shown.c_str());
    plausible += found;
  }
  EXPECT_GE(plausible, 8);
}

// The README's first command runs fill-mask without --model: the program's default is this model.
TEST(DemoModel, IsTheProgramsDefaultModel) {
  const char* text = kCases[0].text;
  const std::string cmd = std::string("env -u ROBERTA_MODEL '") + ROBERTA_BINARY + "' fill-mask --json '" + text + "'";
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
  ASSERT_EQ(pclose(pipe), 0) << out;
  const auto from_program = nlohmann::json::parse(out);
  const auto from_library = roberta::FillMask::load(ROBERTA_DEMO_MODEL)(text).at(0);
  ASSERT_EQ(from_program.size(), from_library.size());
  for (size_t i = 0; i < from_library.size(); ++i) EXPECT_EQ(from_program[i]["token"], from_library[i].token) << i;
}

}  // namespace
