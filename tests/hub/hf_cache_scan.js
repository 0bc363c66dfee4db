// node hf_cache_scan.js [CACHE_DIR]: Hugging Face's own reading of a hub cache (@huggingface/hub's
// scanCacheDir; without CACHE_DIR it finds the cache from HF_HUB_CACHE, HF_HOME, ... as
// huggingface_hub does). Prints {cache, repos: [{id, path, revisions: [{commit, path, refs}]}]}.
const { scanCacheDir, getHFHubCachePath } = require('@huggingface/hub');

(async () => {
  const dir = process.argv[2];
  const info = await scanCacheDir(dir);
  console.log(JSON.stringify({
    cache: dir || getHFHubCachePath(),
    repos: info.repos.map((r) => ({
      id: r.id.name, type: r.id.type, path: r.path,
      revisions: r.revisions.map((v) => ({ commit: v.commitOid, path: v.path, refs: v.refs })),
    })),
    warnings: info.warnings.map((w) => String(w)),
  }));
})().catch((e) => { console.error(e); process.exit(1); });
