#pragma once
// A model named as transformers' and sentence-transformers' from_pretrained name it: a folder, or a
// Hugging Face Hub id ("FacebookAI/roberta-base", "org/name@revision") looked up in the local
// Hugging Face cache, as huggingface_hub lays it out. Nothing is downloaded.
//
//   std::string dir = roberta::resolve_model("sentence-transformers/all-distilroberta-v1");
//   roberta::Embedder embed = roberta::Embedder::load(dir);  // <cache>/models--.../snapshots/<commit>
#include <string>

namespace roberta {

// `name_or_path` as given when it exists (a folder or a file), else the snapshot folder of the Hub
// id in the cache: the commit `revision` names (a branch or tag through the cache's refs/, or a
// commit hash; default: a "@revision" suffix of the id, else "main"). `cache_dir` empty: the
// cache huggingface_hub uses (HF_HUB_CACHE, else HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub). A name that is not a valid
// Hub id is returned as given, for the loader to report. Error (kIo) when the id's snapshot is not
// in the cache, naming the folder looked for and how to fill it.
std::string resolve_model(const std::string& name_or_path, const std::string& revision = "",
                          const std::string& cache_dir = "");

}  // namespace roberta
