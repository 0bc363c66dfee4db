// The batcher with the task pipelines (/predict, /rerank, /fill_mask): jobs of several requests
// share forward passes, and each request's rows, finished by the pipeline, equal what the pipeline
// gives for that request alone.
#include <gtest/gtest.h>

#include <filesystem>
#include <future>
#include <thread>

#include "roberta/pipelines.h"
#include "server/batcher.h"
#include "server/metrics.h"

namespace {

using namespace roberta;
using namespace roberta::server;

const std::filesystem::path kFixtures(ROBERTA_CLI_FIXTURES);

// An embedding job of many sequences: with a budget of 128 tokens it needs about 10 passes, and
// while the batcher works on it, jobs submitted after it pile up and go out together.
std::shared_ptr<Job> blocker(const Embedder& embedder) {
  auto job = std::make_shared<Job>();
  for (int i = 0; i < 100; ++i) job->texts.push_back(embedder.prepare("a long enough sentence to take some of the budget"));
  return job;
}

// A budget of `tokens` per pass.
BatcherOptions budget(size_t tokens) {
  BatcherOptions o;
  o.max_batch_tokens = tokens;
  return o;
}
const BatcherOptions kSmallPasses = budget(128);

std::shared_ptr<Job> ids_job(Job::Kind kind, const std::vector<const Encoding*>& encodings) {
  auto job = std::make_shared<Job>();
  job->kind = kind;
  for (const Encoding* e : encodings) job->sequences.push_back(e->ids);
  return job;
}

bool wait(Batcher& b, Job& job) { return b.wait(job, [] { return true; }) && !job.error; }

// Submits `big`, waits until its first pass is under way, then submits `jobs` (fewer tokens than
// one pass holds) one after the other and checks that they were not kept waiting behind the big
// request (kinds take turns): they went out in one of the two passes after the one running when
// the last was submitted. When no pass began while they were being submitted (the usual case),
// they all shared the next pass.
void submit_behind_a_big_request(Batcher& batcher, const std::shared_ptr<Job>& big,
                                 const std::vector<std::shared_ptr<Job>>& jobs) {
  batcher.submit(big);
  while (batcher.passes() == 0) std::this_thread::yield();
  const uint64_t before = batcher.passes();
  for (const auto& j : jobs) batcher.submit(j);
  const uint64_t after = batcher.passes();
  for (const auto& j : jobs) {
    ASSERT_TRUE(batcher.wait(*j, [] { return true; }));
    EXPECT_LE(j->last_pass, after + 2);
    if (before == after) {
      EXPECT_EQ(j->last_pass, after + 1) << "requests submitted together shared one pass";
    }
  }
  // (Had the big request's kind gone first, they would have waited for its ~10 passes.)
  ASSERT_TRUE(batcher.wait(*big, [] { return true; }));
  EXPECT_GE(big->last_pass, 8u);
}

TEST(BatcherTasks, FillMaskRequestsSharePassesAndEqualOneAtATime) {
  const Embedder embedder = Embedder::load(kFixtures / "tiny");
  const FillMask fill(embedder.model(), embedder.tokenizer());
  Metrics metrics(512);
  Batcher batcher({.embedder = &embedder, .fill_mask = &fill}, kSmallPasses, metrics);
  const std::vector<std::string> texts{"The capital of France is <mask>.", "A <mask> and a <mask> walked in.",
                                       "She opened the <mask>.", "<mask>"};
  FillMaskOptions o;
  o.top_k = 3;
  std::vector<FillMask::Prepared> prepared;
  std::vector<std::shared_ptr<Job>> jobs;
  for (const auto& t : texts) {
    prepared.push_back(fill.prepare(t));
    jobs.push_back(ids_job(Job::Kind::kMaskLogits, {&prepared.back().encoding}));
  }
  submit_behind_a_big_request(batcher, blocker(embedder), jobs);
  for (size_t i = 0; i < jobs.size(); ++i) {
    ASSERT_FALSE(jobs[i]->error) << i;
    ASSERT_EQ(jobs[i]->mask_logits.size(), 1u);
    EXPECT_EQ(jobs[i]->mask_logits[0].rows, prepared[i].mask_positions.size());
    // Bit for bit the rows of the text run alone, and so the same candidates.
    EXPECT_EQ(jobs[i]->mask_logits[0].data, fill.run(std::span(&prepared[i], 1)).data) << texts[i];
    const auto batched = fill.finish(prepared[i], jobs[i]->mask_logits[0], o), alone = fill(texts[i], o);
    ASSERT_EQ(batched.size(), alone.size());
    for (size_t m = 0; m < alone.size(); ++m)
      for (size_t k = 0; k < alone[m].size(); ++k) {
        EXPECT_EQ(batched[m][k].token, alone[m][k].token);
        EXPECT_EQ(batched[m][k].score, alone[m][k].score);
        EXPECT_EQ(batched[m][k].sequence, alone[m][k].sequence);
      }
  }
}

TEST(BatcherTasks, MaskRowsPerPassAreBounded) {
  const Embedder embedder = Embedder::load(kFixtures / "tiny");
  const FillMask fill(embedder.model(), embedder.tokenizer());
  Metrics metrics(512);
  BatcherOptions o = kSmallPasses;
  o.max_batch_tokens = 4096;
  o.max_batch_mask_rows = 4;  // three masks a text: one text a pass
  Batcher batcher({.embedder = &embedder, .fill_mask = &fill}, o, metrics);
  const FillMask::Prepared p = fill.prepare("<mask> <mask> <mask>");
  auto job = ids_job(Job::Kind::kMaskLogits, {&p.encoding, &p.encoding, &p.encoding});
  const uint64_t before = batcher.passes();
  batcher.submit(job);
  ASSERT_TRUE(wait(batcher, *job));
  EXPECT_EQ(batcher.passes() - before, 3u);
  for (const Matrix& m : job->mask_logits) EXPECT_EQ(m.data, job->mask_logits[0].data);
}

// /predict and /rerank jobs are one kind (the classifier's logits): they share passes.
TEST(BatcherTasks, PredictAndRerankRequestsSharePassesAndEqualOneAtATime) {
  for (const char* name : {"sentiment", "reranker"}) {
    SCOPED_TRACE(name);
    const Embedder embedder = Embedder::load(kFixtures / name);
    const TextClassifier classifier(embedder.model(), embedder.tokenizer());
    const CrossEncoder ce(embedder.model(), embedder.tokenizer());
    Metrics metrics(512);
    Batcher batcher({.embedder = &embedder, .classifier = &classifier}, kSmallPasses, metrics);
    TextClassifyOptions all;
    all.top_k = std::nullopt;
    const std::vector<std::vector<TextInput>> predicts{{{"A first text.", std::nullopt}},
                                                       {{"A man plays.", "Someone makes music."}, {"Short.", std::nullopt}},
                                                       {{"Another request of one text", std::nullopt}}};
    const std::vector<std::string> docs{"Berlin has 3.5 million people.", "Paris.", "Berlin is big."};
    std::vector<TextClassifier::Prepared> prepared;
    std::vector<std::shared_ptr<Job>> jobs;
    for (const auto& in : predicts) {
      prepared.push_back(classifier.prepare(in, all));
      std::vector<const Encoding*> e;
      for (const auto& enc : prepared.back().encodings) e.push_back(&enc);
      jobs.push_back(ids_job(Job::Kind::kSequenceLogits, e));
    }
    const bool ranks = classifier.config().num_labels() == 1;
    CrossEncoder::Prepared pr;
    std::shared_ptr<Job> rank_job;
    if (ranks) {
      pr = ce.prepare_rank("How many people live in Berlin?", docs);
      std::vector<const Encoding*> e;
      for (const auto& enc : pr.encodings) e.push_back(&enc);
      rank_job = ids_job(Job::Kind::kSequenceLogits, e);
    }
    auto all_jobs = jobs;
    if (rank_job) all_jobs.push_back(rank_job);
    submit_behind_a_big_request(batcher, blocker(embedder), all_jobs);
    for (size_t i = 0; i < jobs.size(); ++i) {
      ASSERT_FALSE(jobs[i]->error) << i;
      EXPECT_EQ(jobs[i]->logits.data, classifier.run(prepared[i]).data) << i;  // bit for bit
      const auto batched = classifier.finish(prepared[i], jobs[i]->logits, all);
      const auto alone = classifier(predicts[i], all);
      ASSERT_EQ(batched.size(), alone.size());
      for (size_t r = 0; r < alone.size(); ++r)
        for (size_t k = 0; k < alone[r].size(); ++k) {
          EXPECT_EQ(batched[r][k].label, alone[r][k].label);
          EXPECT_EQ(batched[r][k].score, alone[r][k].score);
        }
    }
    if (rank_job) {
      ASSERT_FALSE(rank_job->error);
      const auto batched = ce.finish_rank(pr, rank_job->logits, docs), alone = ce.rank("How many people live in Berlin?", docs);
      ASSERT_EQ(batched.size(), alone.size());
      for (size_t r = 0; r < alone.size(); ++r) {
        EXPECT_EQ(batched[r].corpus_id, alone[r].corpus_id);
        EXPECT_EQ(batched[r].score, alone[r].score);
      }
    }
  }
}

TEST(BatcherTasks, ManyThreadsOfEveryKindAtOnce) {
  const Embedder embedder = Embedder::load(kFixtures / "tiny");
  const FillMask fill(embedder.model(), embedder.tokenizer());
  Metrics metrics(512);
  Batcher batcher({.embedder = &embedder, .fill_mask = &fill}, budget(256), metrics);
  std::vector<std::future<bool>> done;
  for (int t = 0; t < 16; ++t)
    done.push_back(std::async(std::launch::async, [&, t] {
      const std::string text = "thread " + std::to_string(t) + " says <mask>";
      if (t % 2) {
        auto job = std::make_shared<Job>();
        job->texts = {embedder.prepare(text)};
        batcher.submit(job);
        return wait(batcher, *job) && job->pooled.rows == 1;
      }
      const FillMask::Prepared p = fill.prepare(text);
      auto job = ids_job(Job::Kind::kMaskLogits, {&p.encoding});
      batcher.submit(job);
      return wait(batcher, *job) && job->mask_logits[0].data == fill.run(std::span(&p, 1)).data;
    }));
  for (auto& f : done) EXPECT_TRUE(f.get());
}

// Text jobs of `kind`, one per text, submitted together behind a big request.
std::vector<std::shared_ptr<Job>> text_jobs_behind(Batcher& batcher, const Embedder& embedder, Job::Kind kind,
                                                   const std::vector<std::string>& texts) {
  std::vector<std::shared_ptr<Job>> jobs;
  for (const auto& t : texts) {
    jobs.push_back(std::make_shared<Job>());
    jobs.back()->kind = kind;
    jobs.back()->texts.push_back(embedder.prepare(t));
  }
  submit_behind_a_big_request(batcher, blocker(embedder), jobs);
  return jobs;
}

const std::vector<std::string> kTexts{"The capital of France is Paris.", "A man and a woman walked in.",
                                      "She opened the door.", "A"};

TEST(BatcherTasks, SparseRequestsSharePassesAndEqualOneAtATime) {
  const Embedder embedder = Embedder::load(kFixtures / "tiny");
  const SparseEncoder sparse(embedder.model(), embedder.tokenizer());
  Metrics metrics(512);
  Batcher batcher({.embedder = &embedder, .sparse = &sparse}, kSmallPasses, metrics);
  const auto jobs = text_jobs_behind(batcher, embedder, Job::Kind::kSparse, kTexts);
  for (size_t i = 0; i < jobs.size(); ++i) {
    ASSERT_FALSE(jobs[i]->error) << i;
    const SparseVector alone = sparse(std::span(&kTexts[i], 1))[0];
    EXPECT_EQ(jobs[i]->sparse[0].indices, alone.indices) << kTexts[i];
    EXPECT_EQ(jobs[i]->sparse[0].values, alone.values) << kTexts[i];
  }
}

TEST(BatcherTasks, M3RequestsSharePassesAndEqualOneAtATime) {
  const Embedder embedder = Embedder::load(kFixtures / "bge-m3");
  const M3Embedder m3 = M3Embedder::with_heads(embedder, kFixtures / "bge-m3");
  Metrics metrics(512);
  Batcher batcher({.embedder = &embedder, .m3 = &m3}, kSmallPasses, metrics);
  const auto jobs = text_jobs_behind(batcher, embedder, Job::Kind::kM3, kTexts);
  for (size_t i = 0; i < jobs.size(); ++i) {
    ASSERT_FALSE(jobs[i]->error) << i;
    const M3Output alone = m3(std::span(&kTexts[i], 1), {.dense = false, .sparse = true, .colbert = true});
    EXPECT_EQ(jobs[i]->sparse[0].indices, alone.lexical[0].indices) << kTexts[i];
    EXPECT_EQ(jobs[i]->sparse[0].values, alone.lexical[0].values) << kTexts[i];
    EXPECT_EQ(jobs[i]->colbert[0].data, alone.colbert[0].data) << kTexts[i];
  }
}

TEST(BatcherTasks, KindWithoutItsPipelineFailsAtSubmit) {
  const Embedder embedder = Embedder::load(kFixtures / "tiny");
  Metrics metrics(512);
  Batcher batcher(embedder, kSmallPasses, metrics);
  for (const auto kind : {Job::Kind::kSparse, Job::Kind::kM3}) {
    auto job = std::make_shared<Job>();
    job->kind = kind;
    job->texts = {embedder.prepare("a")};
    batcher.submit(job);
    ASSERT_TRUE(job->error);
    EXPECT_EQ(job->error->kind(), ErrorKind::kInvalidModel);
  }
  for (const auto kind : {Job::Kind::kSequenceLogits, Job::Kind::kMaskLogits}) {
    auto job = std::make_shared<Job>();
    job->kind = kind;
    job->sequences = {{0, 2}};
    batcher.submit(job);
    ASSERT_TRUE(job->error);
    EXPECT_EQ(job->error->kind(), ErrorKind::kInvalidModel);
    EXPECT_TRUE(batcher.wait(*job, [] { return true; }));
  }
}

}  // namespace
