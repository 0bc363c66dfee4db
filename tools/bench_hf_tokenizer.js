#!/usr/bin/env node
// Throughput of Hugging Face's Rust tokenizer (npm `tokenizers`, node binding) on the corpus, as
// the reference point for roberta.cpp's tokenizer benchmark. Run it through
// bench_hf_tokenizer.sh, which installs the npm package into a scratch folder outside the repo.
//
//   node bench_hf_tokenizer.js [--corpus DIR] [--tokenizer FILE] [--modes m1,m2,...]
//                              [--chunk N] [--files a.txt,b.txt]
//
// Every line of each corpus file (split on "\n", final empty string dropped) is encoded without
// special tokens, as in corpus/SOURCES.md. For each file it prints lines, tokens, seconds,
// tokens/s, MB/s (file bytes, newlines included, / 1e6 / seconds), the token count and the
// SHA-256 of the id stream written as little-endian int32, checked against SOURCES.md.
//
// Modes (each runs in a fresh child process, so the environment variables below take effect
// before the native module loads, and every mode starts with a cold BPE cache):
//   b1            lines one by one: `await tok.encode(line, null, {addSpecialTokens:false})`,
//                 TOKENIZERS_PARALLELISM=false. Pays one N-API async call per line.
//   batch_nopar   encodeBatch on chunks of --chunk lines, TOKENIZERS_PARALLELISM=false:
//                 HF iterates the batch serially on the calling (libuv worker) thread.
//   batch_rayon1  encodeBatch on chunks, RAYON_NUM_THREADS=1 (rayon pool of one thread).
//   batch_multi   encodeBatch on chunks with the default environment (rayon, one thread per core).
// Every call is awaited before the next one starts, so one call is in flight at a time. The
// single-threaded batch modes also set UV_THREADPOOL_SIZE=1, so that node has one libuv worker
// thread and the per-thread CPU times show all native work on one thread. b1 keeps node's default
// pool of 4 libuv threads: successive calls land on different (idle) workers, never two at once
// (process CPU/wall stays <= 1), and it measured about 20% faster than with a pool of one.
// Timing covers only the encode calls and reading the ids out of the returned encodings
// (`getIds()`, JS work on the main thread, reported apart as extract_s), not file reading,
// splitting or hashing. Per-thread CPU time is read from /proc/self/task/*/stat around the timed
// part, to show how many threads really worked.
// The last line of stdout is one JSON object with every figure (for a C++ benchmark script).
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const crypto = require('crypto');
const { spawnSync } = require('child_process');

const MODES = {
  b1: { env: { TOKENIZERS_PARALLELISM: 'false' }, threads: 'single' },
  batch_nopar: { env: { TOKENIZERS_PARALLELISM: 'false', UV_THREADPOOL_SIZE: '1' }, threads: 'single' },
  batch_rayon1: { env: { RAYON_NUM_THREADS: '1', UV_THREADPOOL_SIZE: '1' }, threads: 'single' },
  batch_multi: { env: {}, threads: 'multi' },
};

function parseArgs(argv) {
  const a = {
    corpus: '/work/shared/assets/corpus',
    tokenizer: null,
    modes: Object.keys(MODES),
    chunk: 10000,
    files: null,
    worker: null,
  };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const v = () => {
      if (i + 1 >= argv.length) throw new Error(`missing value for ${k}`);
      return argv[++i];
    };
    if (k === '--corpus') a.corpus = v();
    else if (k === '--tokenizer') a.tokenizer = v();
    else if (k === '--modes') a.modes = v().split(',').filter(Boolean);
    else if (k === '--chunk') a.chunk = parseInt(v(), 10);
    else if (k === '--files') a.files = v().split(',').filter(Boolean);
    else if (k === '--worker') a.worker = v();
    else if (k === '-h' || k === '--help') {
      console.log(fs.readFileSync(__filename, 'utf8').split('\n').slice(1, 28).join('\n'));
      process.exit(0);
    } else throw new Error(`unknown argument ${k}`);
  }
  for (const m of a.modes) if (!MODES[m]) throw new Error(`unknown mode ${m}`);
  if (!a.tokenizer) {
    a.tokenizer = process.env.ROBERTA_TOKENIZER_JSON ||
      path.join(path.dirname(path.resolve(a.corpus)), 'roberta-base-tokenizer', 'tokenizer.json');
  }
  if (!a.files) a.files = fs.readdirSync(a.corpus).filter((f) => f.endsWith('.txt')).sort();
  return a;
}

// Golden token counts and hashes from corpus/SOURCES.md.
function readGoldens(corpus) {
  const g = {};
  let text = '';
  try {
    text = fs.readFileSync(path.join(corpus, 'SOURCES.md'), 'utf8');
  } catch (e) {
    return g;
  }
  for (const m of text.matchAll(/^\| ([\w.-]+\.txt) \| [\d]+ \| [\d]+ \| `[0-9a-f]{64}` \| (\d+) \|/gm)) {
    g[m[1]] = { tokens: parseInt(m[2], 10) };
  }
  for (const m of text.matchAll(/([\w.-]+\.txt): `([0-9a-f]{64})`/g)) {
    g[m[1]] = Object.assign(g[m[1]] || {}, { sha256: m[2] });
  }
  return g;
}

// utime+stime per thread, in clock ticks.
function threadTicks() {
  const out = new Map();
  let tids = [];
  try {
    tids = fs.readdirSync('/proc/self/task');
  } catch (e) {
    return out;
  }
  for (const tid of tids) {
    try {
      const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // fields after "(comm) ": state=0 ... utime=11 stime=12 (0-based here)
      const comm = fs.readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim();
      out.set(tid, { ticks: parseInt(f[11], 10) + parseInt(f[12], 10), comm });
    } catch (e) {
      // thread ended meanwhile
    }
  }
  return out;
}

const TICK = 0.01; // USER_HZ is 100 on Linux

function threadReport(before, after, wall) {
  const rows = [];
  for (const [tid, a] of after) {
    const b = before.get(tid);
    const d = (a.ticks - (b ? b.ticks : 0)) * TICK;
    if (d > 0) rows.push({ tid: Number(tid), comm: a.comm, cpu_s: +d.toFixed(2) });
  }
  rows.sort((x, y) => y.cpu_s - x.cpu_s);
  const busy = rows.filter((r) => r.cpu_s >= 0.05 * wall).length;
  return { threads_total: after.size, threads_busy: busy, per_thread: rows.slice(0, 8) };
}

class IdSink {
  constructor() {
    this.buf = new Int32Array(1 << 20);
    this.n = 0;
  }
  push(ids) {
    if (this.n + ids.length > this.buf.length) {
      let cap = this.buf.length * 2;
      while (cap < this.n + ids.length) cap *= 2;
      const nb = new Int32Array(cap);
      nb.set(this.buf.subarray(0, this.n));
      this.buf = nb;
    }
    this.buf.set(ids, this.n);
    this.n += ids.length;
  }
  sha256() {
    // Int32Array is little-endian on every platform node runs on here (x86-64, arm64).
    const view = Buffer.from(this.buf.buffer, 0, this.n * 4);
    return crypto.createHash('sha256').update(view).digest('hex');
  }
}

async function runWorker(args) {
  const { Tokenizer } = require('tokenizers');
  const tok = Tokenizer.fromFile(args.tokenizer);
  const mode = args.worker;
  const opts = { addSpecialTokens: false };
  const results = {};
  let totalBefore = null;
  const cpu0 = process.cpuUsage();
  let wallAll = 0;
  for (const file of args.files) {
    const buf = fs.readFileSync(path.join(args.corpus, file));
    const lines = buf.toString('utf8').split('\n');
    if (lines.length && lines[lines.length - 1] === '') lines.pop();
    const sink = new IdSink();
    if (!totalBefore) totalBefore = threadTicks();
    const tb = threadTicks();
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    let extractNs = 0n;
    if (mode === 'b1') {
      for (let i = 0; i < lines.length; i++) {
        const e = await tok.encode(lines[i], null, opts);
        const x0 = process.hrtime.bigint();
        sink.push(e.getIds());
        extractNs += process.hrtime.bigint() - x0;
      }
    } else {
      const chunk = args.chunk;
      for (let i = 0; i < lines.length; i += chunk) {
        const encs = await tok.encodeBatch(lines.slice(i, i + chunk), opts);
        const x0 = process.hrtime.bigint();
        for (const e of encs) sink.push(e.getIds());
        extractNs += process.hrtime.bigint() - x0;
      }
    }
    const t1 = process.hrtime.bigint();
    const c1 = process.cpuUsage(c0);
    const ta = threadTicks();
    const seconds = Number(t1 - t0) / 1e9;
    wallAll += seconds;
    results[file] = {
      lines: lines.length,
      bytes: buf.length,
      tokens: sink.n,
      seconds: +seconds.toFixed(3),
      tokens_per_s: Math.round(sink.n / seconds),
      mb_per_s: +(buf.length / 1e6 / seconds).toFixed(3),
      extract_s: +(Number(extractNs) / 1e9).toFixed(3),
      cpu_s: +((c1.user + c1.system) / 1e6).toFixed(2),
      sha256: sink.sha256(),
      threads: threadReport(tb, ta, seconds),
    };
  }
  const cpuAll = process.cpuUsage(cpu0);
  const totalThreads = threadReport(totalBefore, threadTicks(), wallAll);
  process.stdout.write(JSON.stringify({ mode, results, cpu_s: (cpuAll.user + cpuAll.system) / 1e6,
    threads: totalThreads }) + '\n');
}

function fmt(n, w) {
  return String(n).padStart(w);
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args.worker) {
    runWorker(args).catch((e) => {
      console.error(e);
      process.exit(1);
    });
    return;
  }
  // (the corpus's golden counts are roberta-base's: another tokenizer has none to check)
  const roberta = path.basename(path.dirname(path.resolve(args.tokenizer))) === 'roberta-base-tokenizer';
  const goldens = roberta ? readGoldens(args.corpus) : {};
  const version = require('tokenizers/package.json').version;
  const out = {
    tool: 'hf-tokenizers-node',
    hf_tokenizers_npm: version,
    node: process.version,
    cpus: os.cpus().length,
    chunk: args.chunk,
    corpus: path.resolve(args.corpus),
    loadavg_start: os.loadavg().map((x) => +x.toFixed(2)),
    modes: {},
    all_ok: true,
  };
  console.log(`HF tokenizers (npm ${version}), node ${process.version}, ${out.cpus} cpus, ` +
    `load average ${out.loadavg_start.join(' ')}`);
  for (const mode of args.modes) {
    const env = Object.assign({}, process.env);
    delete env.TOKENIZERS_PARALLELISM;
    delete env.RAYON_NUM_THREADS;
    Object.assign(env, MODES[mode].env);
    const childArgs = [__filename, '--worker', mode, '--corpus', args.corpus, '--tokenizer',
      args.tokenizer, '--chunk', String(args.chunk), '--files', args.files.join(',')];
    const envDesc = Object.entries(MODES[mode].env).map(([k, v]) => `${k}=${v}`).join(' ') || '(default env)';
    console.log(`\n== mode ${mode}: ${mode === 'b1' ? 'encode() per line' : `encodeBatch(${args.chunk} lines)`}, ${envDesc}`);
    const r = spawnSync(process.execPath, childArgs, { env, encoding: 'utf8', maxBuffer: 64 << 20,
      stdio: ['ignore', 'pipe', 'inherit'] });
    if (r.status !== 0) {
      console.error(`mode ${mode} failed (exit ${r.status})`);
      out.all_ok = false;
      continue;
    }
    const res = JSON.parse(r.stdout.trim().split('\n').pop());
    let tl = 0, tt = 0, tb = 0, ts = 0, tx = 0;
    console.log(`${'file'.padEnd(18)} ${fmt('lines', 8)} ${fmt('tokens', 9)} ${fmt('seconds', 8)} ` +
      `${fmt('tokens/s', 10)} ${fmt('MB/s', 7)} ${fmt('cpu_s', 6)} ${fmt('getIds_s', 8)} busy-thr  sha256 / golden`);
    for (const file of args.files) {
      const f = res.results[file];
      const g = goldens[file] || {};
      f.golden_tokens = g.tokens ?? null;
      f.golden_sha256 = g.sha256 ?? null;
      f.ok = g.tokens !== undefined && g.sha256 !== undefined
        ? f.tokens === g.tokens && f.sha256 === g.sha256 : null;
      if (f.ok === false) out.all_ok = false;
      tl += f.lines; tt += f.tokens; tb += f.bytes; ts += f.seconds; tx += f.extract_s;
      console.log(`${file.padEnd(18)} ${fmt(f.lines, 8)} ${fmt(f.tokens, 9)} ${fmt(f.seconds.toFixed(2), 8)} ` +
        `${fmt(f.tokens_per_s, 10)} ${fmt(f.mb_per_s.toFixed(2), 7)} ${fmt(f.cpu_s.toFixed(1), 6)} ` +
        `${fmt(f.extract_s.toFixed(2), 8)} ` +
        `${fmt(f.threads.threads_busy, 8)}  ${f.sha256.slice(0, 12)}… ` +
        `${f.ok === null ? '(no golden)' : f.ok ? 'OK' : `MISMATCH (golden ${g.tokens} ${String(g.sha256).slice(0, 12)}…)`}`);
    }
    const total = {
      lines: tl, tokens: tt, bytes: tb, seconds: +ts.toFixed(3),
      tokens_per_s: Math.round(tt / ts), mb_per_s: +(tb / 1e6 / ts).toFixed(3),
      cpu_s: +res.cpu_s.toFixed(2), cpu_per_wall: +(res.cpu_s / ts).toFixed(2),
      extract_s: +tx.toFixed(3),
      // without the JS time spent reading ids out of the encodings (getIds)
      encode_only_tokens_per_s: Math.round(tt / (ts - tx)),
    };
    console.log(`${'TOTAL'.padEnd(18)} ${fmt(tl, 8)} ${fmt(tt, 9)} ${fmt(ts.toFixed(2), 8)} ` +
      `${fmt(total.tokens_per_s, 10)} ${fmt(total.mb_per_s.toFixed(2), 7)} ${fmt(total.cpu_s.toFixed(1), 6)} ` +
      `${fmt(tx.toFixed(2), 8)}   process CPU/wall ${total.cpu_per_wall}; ` +
      `without getIds: ${total.encode_only_tokens_per_s} tokens/s`);
    console.log(`threads with CPU time during the timed parts: ` +
      res.threads.per_thread.map((t) => `${t.comm}[${t.tid}] ${t.cpu_s}s`).join(', '));
    out.modes[mode] = { env: MODES[mode].env, threads: MODES[mode].threads, files: res.results, total,
      thread_cpu: res.threads };
  }
  out.loadavg_end = os.loadavg().map((x) => +x.toFixed(2));
  console.log(`\nload average at end ${out.loadavg_end.join(' ')}; all golden checks ${out.all_ok ? 'OK' : 'FAILED'}`);
  console.log(JSON.stringify(out));
  process.exitCode = out.all_ok ? 0 : 1;
}

main();
