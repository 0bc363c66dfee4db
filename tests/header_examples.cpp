// The usage examples of the public headers and docs/library.md, compiled with the
// tests so that they cannot drift from the API (never called: their model folders do not exist).
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "roberta/dev/npy.h"
#include "roberta/dev/weights.h"
#include "roberta/roberta.h"

namespace roberta::examples {

[[maybe_unused]] void task_pipelines() {
  roberta::TextClassifier classify = roberta::TextClassifier::load("my-sentiment-model");
  roberta::TextClassifyOptions all;
  all.top_k = std::nullopt;
  const auto labels = classify({{"I love this!"}}, all);
  for (const auto& s : labels[0]) std::printf("%s %.3f\n", s.label.c_str(), s.score);
  auto pair = classify({{"A man plays.", "Someone makes music."}}, all);

  roberta::ZeroShotClassifier zs = roberta::ZeroShotClassifier::load("models/roberta-large-mnli");
  roberta::ZeroShotOptions o;
  o.candidate_labels = {"urgent", "not urgent", "phone"};
  roberta::ZeroShotResult r = zs("My phone broke, I need help now!", o);

  roberta::CrossEncoder ce = roberta::CrossEncoder::load("models/my-reranker");
  roberta::Matrix s = ce.predict({{"How many people live in Berlin?", "Berlin has 3.5 million people."}});
  auto ranked = ce.rank("How many people live in Berlin?", {"Berlin is big.", "Paris."});

  roberta::TokenClassifier ner = roberta::TokenClassifier::load("models/roberta-ner");
  roberta::TokenClassifyOptions t;
  t.aggregation = roberta::Aggregation::kSimple;
  for (const auto& e : ner("Angela Merkel visited New York", t))
    std::cout << e.entity << " " << e.word << " " << e.start << "-" << e.end << "\n";
  const std::vector<std::string> words{"Angela", "Merkel", "visited", "New", "York"};
  for (const auto& e : ner.classify_words(words, " ", t)) std::cout << e.entity << " " << e.start << "\n";
  roberta::Tokenizer words_tok = roberta::Tokenizer::from_dir("models/roberta-ner");
  for (const auto& token : words_tok.encode_words(words).tokens) std::cout << token << "\n";

  roberta::QuestionAnswerer qa = roberta::QuestionAnswerer::load("models/roberta-base-squad2");
  auto answers = qa("Where do I live?", "My name is Wolfgang and I live in Berlin");
  std::printf("%s %.3f %lld\n", answers[0].answer.c_str(), answers[0].score, static_cast<long long>(answers[0].start));
  (void)pair, (void)r, (void)s, (void)ranked;
}

// The steps of fill_mask.h, text_classifier.h and cross_encoder.h for batching across callers.
[[maybe_unused]] void pipeline_steps() {
  roberta::FillMask fill = roberta::FillMask::load("models/demo");
  roberta::FillMask::Prepared a = fill.prepare("A <mask> day."), b = fill.prepare("The <mask> sat.");
  roberta::Matrix logits = fill.run(std::vector{a, b});
  roberta::Matrix a_rows(a.mask_positions.size(), logits.cols);
  std::copy_n(logits.row(0), a_rows.data.size(), a_rows.data.begin());
  auto candidates = fill.finish(a, a_rows);

  roberta::TextClassifier classify = roberta::TextClassifier::load("my-sentiment-model");
  const std::vector<roberta::TextInput> inputs_a{{"Great!", std::nullopt}}, inputs_b{{"Bad.", "Worse."}};
  auto pa = classify.prepare(inputs_a), pb = classify.prepare(inputs_b);
  roberta::Batch batch;
  for (const auto& e : pa.encodings) batch.add_sequence(e.ids);
  for (const auto& e : pb.encodings) batch.add_sequence(e.ids);
  roberta::Matrix rows = classify.run(batch);
  for (const auto& r : classify.run_batched(inputs_b))
    if (!r.ok()) std::cerr << r.error->what() << "\n";

  roberta::CrossEncoder ce = roberta::CrossEncoder::load("models/my-reranker");
  const std::vector<std::string> documents{"Berlin is big.", "Paris."};
  auto pr = ce.prepare_rank("How many people live in Berlin?", documents);
  roberta::Batch pairs;
  for (const auto& e : pr.encodings) pairs.add_sequence(e.ids);
  auto ranked = ce.finish_rank(pr, ce.run(pairs), documents);
  (void)candidates, (void)rows, (void)ranked;
}

[[maybe_unused]] void library_section() {
  roberta::FillMask fill = roberta::FillMask::load("models/demo");
  const auto predictions = fill("She opened the <mask> and looked out into the garden.");
  for (const auto& c : predictions[0])
    std::printf("%.3f %s\n", c.score, c.token_str.c_str());
  roberta::Embedder embed = roberta::Embedder::load("models/demo");
  roberta::Matrix e = embed(std::vector<std::string>{"first text", "second text"},
                            {.pooling = roberta::Pooling::kMean, .normalize = true});
  roberta::Tokenizer tok = roberta::Tokenizer::from_dir("models/demo");
  roberta::Model model = roberta::Model::load("models/demo");
  roberta::Batch batch;
  batch.add_sequence(tok.encode("Hello world!").ids);
  roberta::Outputs out = model.forward(batch, {.all_hidden_states = true});
  roberta::Model clf = roberta::Model::load("my-sentiment-model");
  clf.require_head(roberta::Head::kSequenceClassification, "so it cannot classify texts");
  roberta::Outputs o = clf.forward(batch, {.sequence_logits = true});
  const std::string& label = clf.config().id2label[0];
  const std::vector<std::string> words{"Angela", "Merkel", "visited", "Paris"};
  roberta::TokenClassifier ner = roberta::TokenClassifier::load("models/roberta-ner");
  auto entities = ner.classify_words(words, " ", {.aggregation = roberta::Aggregation::kSimple});
  roberta::Encoding by_word = tok.encode_words(words);  // word_ids 0..3, offsets into each word
  roberta::set_num_threads(2);
  (void)e, (void)out, (void)o, (void)label, (void)entities, (void)by_word;
}

// The usage comments at the top of the other headers, as written there.
[[maybe_unused]] void header_comments() {
  // embedder.h
  roberta::Embedder embed = roberta::Embedder::load("models/my-sentence-model");
  roberta::Matrix e = embed(std::vector<std::string>{"first text", "second text"});
  // sparse_encoder.h
  roberta::SparseEncoder splade = roberta::SparseEncoder::load("models/my-splade-model");
  std::vector<roberta::SparseVector> v = splade(std::vector<std::string>{"a text", "another"});
  for (const auto& [token, weight] : splade.decode(v[0], 5)) std::printf("%s %.2f\n", token.c_str(), weight);
  const double similarity = roberta::sparse_dot(v[0], v[1]);
  roberta::SparseOptions top{.max_active_dims = 64, .text = {}};
  (void)similarity, (void)splade(std::vector<std::string>{"a query"}, top);
  // m3_embedder.h
  roberta::M3Embedder m3 = roberta::M3Embedder::load("models/bge-m3");
  roberta::M3Output m3_out = m3(std::vector<std::string>{"a text"}, {.sparse = true, .colbert = true});
  std::printf("%zu %zu %zu\n", m3_out.dense.cols, m3_out.lexical[0].indices.size(), m3_out.colbert[0].rows);
  std::vector<roberta::M3Scores> m3_scores = m3.compute_score({{"a query", "a passage"}});
  (void)roberta::colbert_score(m3_out.colbert[0], m3_out.colbert[0]), (void)m3_scores;
  // late_chunking.h
  const std::vector<std::string> texts{"Berlin is a city. It has 3.8 million people."};
  std::vector<roberta::ChunkedText> docs = roberta::late_chunks(embed, texts);  // by sentences
  std::printf("%zu %zu %f\n", docs[0].spans[1].start, docs[0].spans[1].end, docs[0].embeddings.row(1)[0]);
  roberta::LateChunks d = roberta::prepare_late_chunks(embed, texts[0]);
  std::vector<roberta::Matrix> states = embed.run_tokens(d.windows());  // in any batches
  for (size_t k = 0; k < states.size(); ++k) d.add_window(k, states[k]);
  roberta::ChunkedText one = d.finish();
  (void)one;
  // quantization.h
  roberta::QuantizedMatrix q = roberta::quantize_embeddings(e, roberta::Precision::kUbinary);
  roberta::QuantizeRanges r = roberta::QuantizeRanges::of(e);
  (void)q.row(0), (void)roberta::quantize_embeddings(e, roberta::Precision::kInt8, &r);
  // hub.h
  std::string dir = roberta::resolve_model("sentence-transformers/all-distilroberta-v1");
  roberta::Embedder st = roberta::Embedder::load(dir);  // <cache>/models--.../snapshots/<commit>
  // model.h
  roberta::Model model = roberta::Model::load("models/demo");
  roberta::Tokenizer tok = roberta::Tokenizer::from_dir("models/demo");
  roberta::Batch batch;
  batch.add_sequence(tok.encode("The capital of France is Paris.").ids);
  batch.add_sequence(tok.encode("The <mask> sat.").ids);
  roberta::Outputs out = model.forward(batch, {.logits = true, .logit_rows = {batch.offsets[1] + 2}});
  const float* first = out.last_hidden_state.row(0);
  const float* mask_logits = out.logits.row(0);
  // tokenizer.h
  roberta::Tokenizer base = roberta::Tokenizer::from_dir("models/roberta-base");
  roberta::Encoding enc = base.encode("Hello world!");
  std::string text = base.decode(enc.ids, /*skip_special_tokens=*/true);
  const roberta::Encoding qa_pair = base.encode_pair("Where?", "In Berlin.");
  const std::optional<size_t> berlin = qa_pair.char_to_token(3, 1);
  const std::vector<std::string> new_york{"New", "York"};
  const auto word_tokens = base.encode_words(new_york).tokens;
  // config.h
  roberta::ModelConfig c = roberta::ModelConfig::from_file("models/demo/config.json");
  const int64_t head_size = c.hidden_size / c.num_attention_heads;
  // threads.h
  roberta::set_num_threads(4);
  const size_t threads = roberta::num_threads();
  // error.h
  try {
    model.forward(batch);
  } catch (const roberta::Error& err) {
    if (err.kind() == roberta::ErrorKind::kInvalidInput) std::cerr << err.what() << "\n";
  }
  roberta::set_warning_handler([](const std::string& m) { std::clog << "roberta: " << m << "\n"; });
  // cross_encoder.h
  roberta::CrossEncoder ce = roberta::CrossEncoder::load("models/my-reranker");
  roberta::Matrix s = ce.predict({{"How many people live in Berlin?", "Berlin has 3.5 million people."}});
  auto ranked = ce.rank("How many people live in Berlin?", {"Berlin is big.", "Paris."});
  const std::vector<std::string> documents{"Berlin is big.", "Paris."};
  const std::vector<roberta::TextPair> pairs_b{{"q", "d"}};
  auto a = ce.prepare_rank("How many people live in Berlin?", documents), b = ce.prepare(pairs_b);
  roberta::Batch pairs;
  for (const auto* p : {&a, &b})
    for (const auto& x : p->encodings) pairs.add_sequence(x.ids);
  roberta::Matrix logits = ce.run(pairs);
  roberta::Matrix a_logits(a.encodings.size(), logits.cols), b_logits(b.encodings.size(), logits.cols);
  auto best = ce.finish_rank(a, a_logits, documents);
  roberta::Matrix sb = ce.finish(b, b_logits);
  // dev/npy.h, dev/weights.h
  roberta::NpyArray arr = roberta::read_npy("dump/hidden_states_0.npy");
  roberta::write_npy("out/logits.npy", {2, 5, 50265}, std::vector<float>(2 * 5 * 50265));
  roberta::WeightStore w = roberta::WeightStore::open_dir("models/demo");
  if (const roberta::TensorInfo* t = w.find("roberta.embeddings.word_embeddings.weight")) {
    std::vector<float> values = w.to_float(*t);
    (void)values;
  }
  (void)e, (void)first, (void)mask_logits, (void)text, (void)head_size, (void)threads, (void)s, (void)ranked;
  (void)best, (void)sb, (void)arr, (void)berlin, (void)word_tokens;
}

}  // namespace roberta::examples
