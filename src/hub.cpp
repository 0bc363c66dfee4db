#include "roberta/hub.h"

#include <filesystem>
#include <fstream>
#include <regex>

#include "roberta/error.h"
#include "runtime/settings.h"

namespace roberta {
namespace {

namespace fs = std::filesystem;

// huggingface_hub's validate_repo_id: "name" or "namespace/name" of word characters, '-' and '.',
// at most 96 characters, no "--" or "..", not starting or ending with '-' or '.'.
bool is_repo_id(const std::string& id) {
  static const std::regex pattern(R"(^(\b[\w\-.]+\b/)?\b[\w\-.]{1,96}\b$)");
  return id.size() <= 96 && std::regex_match(id, pattern) && id.find("--") == std::string::npos &&
         id.find("..") == std::string::npos;
}

std::string first_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

bool is_commit_hash(const std::string& s) {
  static const std::regex hex40("^[0-9a-f]{40}$");
  return std::regex_match(s, hex40);
}

}  // namespace

std::string resolve_model(const std::string& name_or_path, const std::string& revision, const std::string& cache_dir) {
  std::error_code ec;
  if (fs::exists(name_or_path, ec)) return name_or_path;
  std::string id = name_or_path, rev = revision;
  if (const size_t at = id.rfind('@'); at != std::string::npos && at > 0) {
    if (rev.empty()) rev = id.substr(at + 1);
    id.resize(at);
  }
  if (!is_repo_id(id)) return name_or_path;
  if (rev.empty()) rev = "main";
  const fs::path cache = cache_dir.empty() ? fs::path(runtime::hub_cache_dir()) : fs::path(cache_dir);
  std::string folder = "models--" + id;
  for (size_t p = folder.find('/'); p != std::string::npos; p = folder.find('/', p)) folder.replace(p, 1, "--");
  const fs::path repo = cache / folder;
  const std::string fill =
      "; nothing is downloaded: on a machine with network, fetch it into a Hugging Face cache (`hf download " + id +
      "`, or huggingface_hub's snapshot_download) and copy or point HF_HUB_CACHE at that cache, or give the "
      "model's folder";
  if (!fs::is_directory(repo, ec))
    throw Error(name_or_path + ": not a folder, and not in the Hugging Face cache (" + repo.string() + " does not exist)" +
                    fill,
                ErrorKind::kIo);
  const fs::path ref = repo / "refs" / rev;
  const std::string commit = fs::is_regular_file(ref, ec) ? first_line(ref) : is_commit_hash(rev) ? rev : "";
  if (commit.empty())
    throw Error(name_or_path + ": the Hugging Face cache has no revision \"" + rev + "\" of " + id + " (no " +
                    ref.string() + ")" + fill,
                ErrorKind::kIo);
  const fs::path snapshot = repo / "snapshots" / commit;
  if (!fs::is_directory(snapshot, ec))
    throw Error(name_or_path + ": the Hugging Face cache has no snapshot " + snapshot.string() + " (revision \"" + rev +
                    "\" of " + id + ")" + fill,
                ErrorKind::kIo);
  return snapshot.string();
}

}  // namespace roberta
