// The server's core in-process: the batcher (splitting, interleaving, dropping, exact rows), the
// wire formats, the metrics, and a Server answering a real socket.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <future>
#include <thread>

#include "server/api.h"
#include "server/batcher.h"
#include "server/metrics.h"
#include "server/server.h"

namespace {

using namespace roberta::server;

const std::filesystem::path kTiny = std::filesystem::path(ROBERTA_CLI_FIXTURES) / "tiny";

const roberta::Embedder& embedder() {
  static const roberta::Embedder e = roberta::Embedder::load(kTiny);
  return e;
}

// Options with a token budget, a sequence limit (0: none) and how often wait() asks for the client.
BatcherOptions batching(size_t tokens, size_t requests, std::chrono::milliseconds client_check) {
  BatcherOptions o;
  o.max_batch_tokens = tokens;
  o.max_batch_requests = requests;
  o.client_check = client_check;
  return o;
}

std::shared_ptr<Job> make_job(const std::vector<std::string>& texts) {
  auto job = std::make_shared<Job>();
  for (const auto& t : texts) job->texts.push_back(embedder().prepare(t));
  return job;
}

// Rows of the batcher equal a direct Embedder::run of each text alone, bit for bit.
TEST(Batcher, RowsEqualOneTextAtATimeAndLargeRequestsAreSplit) {
  Metrics metrics(512);
  // A budget of 64 tokens: a request of 12 texts cannot go in one pass.
  Batcher batcher(embedder(), batching(64, 0, std::chrono::milliseconds(100)), metrics);
  std::vector<std::string> texts;
  for (int i = 0; i < 12; ++i) texts.push_back("text number " + std::to_string(i) + " with a few more words in it");
  auto job = make_job(texts);
  const size_t tokens = job->texts[0].ids.size() * texts.size();
  ASSERT_GT(tokens, 64u);
  batcher.submit(job);
  ASSERT_TRUE(batcher.wait(*job, [] { return true; }));
  ASSERT_FALSE(job->error);
  roberta::EmbedOptions raw;
  raw.normalize = false;
  for (size_t i = 0; i < texts.size(); ++i) {
    const roberta::PreparedText p = embedder().prepare(texts[i]);
    const roberta::Matrix alone = embedder().run(std::span(&p, 1), raw);
    EXPECT_EQ(std::vector<float>(job->pooled.row(i), job->pooled.row(i) + job->pooled.cols), alone.data) << i;
  }
  EXPECT_EQ(metrics.render().find("te_batch_next_size_count 1\n"), std::string::npos);  // more than one pass
}

// A one-text request queued behind a large one goes out in the next pass, before the large one is
// done (sequences, not requests, are the unit).
TEST(Batcher, SmallRequestDoesNotWaitForALargeOne) {
  Metrics metrics(512);
  Batcher batcher(embedder(), batching(64, 0, std::chrono::milliseconds(100)), metrics);
  std::vector<std::string> many(40, "a long enough sentence to take some of the budget of a pass");
  auto big = make_job(many);
  auto small = make_job({"small"});
  batcher.submit(big);
  batcher.submit(small);
  const uint64_t started = batcher.passes();  // passes begun by now (this thread may have been preempted)
  ASSERT_TRUE(batcher.wait(*small, [] { return true; }));
  EXPECT_FALSE(small->error);
  ASSERT_TRUE(batcher.wait(*big, [] { return true; }));
  EXPECT_FALSE(big->error);
  // The big request needs about 10 passes (40 x ~14 tokens at 64 per pass); the small one went out
  // in the pass after the one under way at its submit, beside the big one's sequences.
  EXPECT_LE(small->last_pass, std::max<uint64_t>(started + 1, 2));
  EXPECT_GE(big->last_pass, 8u);
}

TEST(Batcher, RequestOfAGoneClientIsDropped) {
  Metrics metrics(512);
  // The client is asked at once (client_check 0), before the 2000 passes can be done.
  Batcher batcher(embedder(), batching(64, 1, {}), metrics);
  std::vector<std::string> many(2000, "a sentence of the request whose client goes away early");
  auto job = make_job(many);
  batcher.submit(job);
  EXPECT_FALSE(batcher.wait(*job, [] { return false; }));
  // Its sequences leave the queue at the next pass; the batcher goes on with other work.
  auto next = make_job({"next"});
  batcher.submit(next);
  ASSERT_TRUE(batcher.wait(*next, [] { return true; }));
  EXPECT_EQ(batcher.queued_sequences(), 0u);
}

TEST(Batcher, ManyThreadsAtOnce) {
  Metrics metrics(512);
  Batcher batcher(embedder(), batching(256, 0, std::chrono::milliseconds(100)), metrics);
  std::vector<std::future<bool>> done;
  for (int t = 0; t < 16; ++t)
    done.push_back(std::async(std::launch::async, [&, t] {
      auto job = make_job({"thread " + std::to_string(t), "second text of thread " + std::to_string(t)});
      batcher.submit(job);
      return batcher.wait(*job, [] { return true; }) && !job->error && job->pooled.rows == 2;
    }));
  for (auto& f : done) EXPECT_TRUE(f.get());
}

// on_idle (the server's malloc_trim) runs once after each burst of passes, when the queue has
// stayed empty for idle_after; never while there is work, nor before the first pass.
TEST(Batcher, OnIdleRunsOnceAfterWorkWhenTheQueueStaysEmpty) {
  Metrics metrics(512);
  std::atomic<int> idle{0};
  BatcherOptions o = batching(256, 0, std::chrono::milliseconds(100));
  o.on_idle = [&] { ++idle; };
  o.idle_after = std::chrono::milliseconds(20);
  Batcher batcher(embedder(), o, metrics);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(idle, 0);
  for (int round = 1; round <= 2; ++round) {
    auto job = make_job({"a text", "another text"});
    batcher.submit(job);
    ASSERT_TRUE(batcher.wait(*job, [] { return true; }));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ(idle, round);
  }
}

TEST(Api, ParseInputs) {
  const json body = json::parse(R"({"inputs": ["a", [5, 6]], "one": "x", "ids": [1, 2], "bad": [1, "a"]})");
  Inputs in = parse_inputs(body, "inputs", 32);
  ASSERT_EQ(in.items.size(), 2u);
  EXPECT_TRUE(in.batch);
  EXPECT_EQ(in.items[0].text, "a");
  EXPECT_EQ(in.items[1].ids, (std::vector<int32_t>{5, 6}));
  EXPECT_FALSE(parse_inputs(body, "one", 32).batch);
  EXPECT_TRUE(parse_inputs(body, "ids", 32).items[0].is_ids);
  const auto status = [&](const char* field, size_t max, bool ids = true) {
    try {
      parse_inputs(body, field, max, ids);
    } catch (const ApiError& e) {
      return e.status;
    }
    return 200;
  };
  EXPECT_EQ(status("bad", 32), 400);
  EXPECT_EQ(status("missing", 32), 400);
  EXPECT_EQ(status("inputs", 1), 413);
  EXPECT_EQ(status("ids", 32, false), 400);
  EXPECT_EQ(status("inputs", 32, false), 400);
}

TEST(Api, ErrorBodiesAndStatusOfEachErrorKind) {
  EXPECT_EQ(api_error(roberta::Error("x")).status, 422);
  EXPECT_EQ(api_error(roberta::Error("x", roberta::ErrorKind::kInvalidModel)).status, 424);
  EXPECT_EQ(api_error(roberta::Error("x", roberta::ErrorKind::kIo)).status, 500);
  const ApiError e(413, ErrorType::kValidation, "too big");
  EXPECT_EQ(tei_error_body(e), R"({"error":"too big","error_type":"Validation"})");
  EXPECT_EQ(openai_error_body(e),
            R"({"error":{"message":"too big","type":"invalid_request_error","param":null,"code":413}})");
  EXPECT_THROW(parse_body("{"), ApiError);
  try {
    parse_body("{\"inputs\": \"caf\xc3\"}");
    FAIL();
  } catch (const ApiError& err) {
    EXPECT_EQ(err.status, 422);
  }
}

TEST(Api, FloatWriters) {
  const float v[] = {1.0f, -0.5f, 0.1f};
  std::string s;
  append_floats(s, v, 3);
  EXPECT_EQ(s, "[1,-0.5,0.1]");
  EXPECT_EQ(base64_floats(v, 1), "AACAPw==");  // 1.0f = 00 00 80 3f
  EXPECT_EQ(base64_floats(v, 3).size(), 16u);
}

TEST(Metrics, PrometheusText) {
  Metrics m(512);
  m.count("te_request_failure", "err", "validation");
  m.count("te_request_failure", "err", "validation");
  m.observe("te_batch_next_size", 3);
  const std::string text = m.render();
  EXPECT_NE(text.find("te_request_failure{err=\"validation\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("te_batch_next_size_bucket{le=\"4\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("te_batch_next_size_bucket{le=\"2\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE te_queue_size gauge"), std::string::npos);
  EXPECT_EQ(m.counter("te_request_failure", "err", "validation"), 2u);
}

// The whole server in-process on a free port, one request over a raw socket, then stop().
TEST(Server, AnswersOverASocketAndStops) {
  ServerOptions o;
  o.model_dir = kTiny.string();
  o.port = 0;
  o.quiet = true;
  Server server(o);
  const int port = server.bind();
  std::thread http([&] { server.serve(); });
  server.load();
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  const std::string body = R"({"inputs": "hello"})";
  const std::string req = "POST /embed HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n"
                          "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  ASSERT_EQ(write(fd, req.data(), req.size()), static_cast<ssize_t>(req.size()));
  std::string answer;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) answer.append(buf, static_cast<size_t>(n));
  close(fd);
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 200")) << answer;
  EXPECT_NE(answer.find("\r\n\r\n[["), std::string::npos);
  server.stop();
  http.join();
  EXPECT_EQ(server.metrics().counter("te_request_success", "method", "single"), 1u);
}

}  // namespace
