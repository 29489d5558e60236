// Conformance against llama.cpp (issue 17): the same GGUF, written by the project's writer, run by
// both engines on the same token ids; and the same strings tokenized by both.
//
//   node tests/conformance/llama_cpp.mjs INFER_PLAN NODE_MODULES WORKDIR
//
// NODE_MODULES holds node-llama-cpp and @node-llama-cpp/linux-x64 (prebuilt llama.cpp for the
// CPU: tools/setup.sh test installs them from npm). Without them the test is skipped (exit 77).
//
// Logits: for qwen3 (tied, q/k norms), qwen2 (biases), llama (normal RoPE), phi (Phi-3's fused q/k/v
// and gate/up), gemma3 (embedding scale, post-norms, GELU, sliding layers' own RoPE base), gemma2
// (soft-capped scores and logits), gpt-oss (sinks, biases everywhere, routed experts with the
// clamped SwiGLU; also as MXFP4_MOE), deepseek2 (latent attention absorbed, a dense first layer,
// routed experts without renormalisation beside a shared one) and deepseek3 (the q bottleneck,
// sigmoid-scored experts chosen with a bias within groups, scaled) at F16, Q8_0, Q4_0,
// Q2_K, Q6_K, the K-quant mixes Q5_K_M, Q4_K_M and Q3_K_M (llama.cpp's per-tensor types), IQ4_XS and
// IQ4_NL and MXFP4 throughout, Q5_0 throughout, Q4_1 and Q5_1 in three, and each with
// YaRN x4, infer-plan decodes 16 tokens greedily after a prompt (--emit
// logits, KV at F16 as llama.cpp keeps it); llama.cpp evaluates prompt + those tokens in one
// teacher-forced batch. Checked at every step:
//   - |logit difference| within a bound derived below from each model's sensitivity;
//   - the same top-1 token, unless llama.cpp's own top-2 gap is within twice the bound;
//   - for a mixture of experts, one step in 16 may exceed the bound (a router near-tie, below).
// Files: GPT-OSS-20B at a tenth written as MXFP4_MOE and DeepSeek-V2-Lite at a tenth load in
// llama.cpp and evaluate a token to finite logits.
// Tokenizer: ~300 strings (ASCII, code, whitespace runs, CJK, emoji, accents, Cyrillic, special
// tokens) give identical ids from `infer-plan tokenize` and llama.cpp's tokenizer, for Qwen's
// pre-tokenizer, Llama 3's, and SentencePiece.
import {execFileSync} from "node:child_process";
import fs from "node:fs";
import path from "node:path";

const [bin, modules, work] = process.argv.slice(2);
if (!bin || !modules || !work) {
  console.error("usage: node llama_cpp.mjs INFER_PLAN NODE_MODULES WORKDIR");
  process.exit(2);
}
let getLlama;
try {
  ({getLlama} = await import(path.resolve(modules, "node-llama-cpp/dist/index.js")));
} catch (e) {
  console.log(`SKIPPED: node-llama-cpp is not installed under ${modules} (npm install node-llama-cpp ` +
              `@node-llama-cpp/linux-x64 --omit=optional): ${e.message.split("\n")[0]}`);
  process.exit(77);
}
fs.mkdirSync(work, {recursive: true});
const here = path.dirname(new URL(import.meta.url).pathname);
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});

function infer(...args) {
  return execFileSync(bin, args, {encoding: "utf8", maxBuffer: 1 << 28, stdio: ["ignore", "pipe", "pipe"]});
}

// The bound. Where both engines multiply the same quantized weights by the same Q8-quantized
// activations they agree bit for bit (one-token prompts do). What differs is attention: llama.cpp
// rounds q and the softmax probabilities to F16 besides K and V (infer-plan keeps q and the
// probabilities in float), and every such rounding is then amplified by the next layer's
// activation quantization, where a value near a rounding boundary moves a whole quantum: a Q8_0
// model moves ~50 times more than an F32 one under the same rounding. So the bound is measured on
// each model with infer-plan alone: S = max |logits with KV at F16 - logits with KV at F32|, the
// effect of two F16 roundings (K and V); llama.cpp's four (q, K, V, probabilities) are allowed
// 4 S, plus a floor for its F16 activations where the weights are F16 (4 L + 1 roundings of
// 2^-11 relative each, L = 2 layers): |dlogit| <= 4 S + 9 x 2^-11 x max |logit|.
function bound(sensitivity, maxLogit) { return 4 * sensitivity + 9 * 2 ** -11 * maxLogit; }

// About 90 tokens: positions where YaRN's interpolation of the slow pairs shows.
const sentence = "The planner answers in milliseconds, and then the runtime proves the answer: it executes the same " +
                 "configuration on the same machine and prints what it measured beside what was predicted. A model " +
                 "that does not fit is a model that does not run; a prediction that is wrong is worse than none.";
const cases = [];
for (const arch of (process.env.ARCHS ?? "qwen3,qwen2,llama,phi,gemma3,gemma2,gpt-oss,deepseek2,deepseek3").split(","))
  // GPT-OSS's own file type too: experts in MXFP4, the rest Q8_0 (llama.cpp's MXFP4_MOE). Q5_0 is what
  // llama.cpp writes for a Q4_K tensor whose rows are not whole 256-value blocks, Q5_1 for a Q5_K one
  // (DeepSeek-V2-Lite's 128-wide attn_k_b in a Q5_K_M file); Q4_1 and Q5_1, whose products take
  // Q8_1 activations in llama.cpp and Q8_0 here, in three families (Qwen3, Llama, DeepSeek-V2).
  for (const type of [...(process.env.TYPES ?? "F16,Q8_0,Q4_0:pure,Q2_K:pure,Q6_K,Q5_K_M,Q4_K_M,Q3_K_M,IQ4_XS,IQ4_NL,MXFP4:pure,Q5_0:pure").split(","),
                      ...(arch === "gpt-oss" && !process.env.TYPES ? ["MXFP4_MOE"] : []),
                      ...(["qwen3", "deepseek2", "llama"].includes(arch) && !process.env.TYPES ? ["Q4_1:pure", "Q5_1:pure"] : [])])
    for (const yarn of [false, true])
      // gemma3's two layers both slide (llama.cpp's pattern of six), and its sliding layers take no
      // scaling: YaRN would change nothing there, so it is not asked
      if (!(yarn && arch === "gemma3")) cases.push({arch, type, yarn});

let failures = 0;
const rows = [];
const unscaledGguf = new Map();  // arch-type -> the file without YaRN
const yarnSeen = new Set();      // architectures where ignoring YaRN would have failed the bound
for (const c of cases) {
  const name = `${c.arch}-${c.type.replace(":pure", "")}${c.yarn ? "-yarn" : ""}`;
  const config = JSON.parse(fs.readFileSync(path.join(here, "models", `${c.arch}.json`), "utf8"));
  // DeepSeek's YaRN with its magnitude terms, as DeepSeek-V2-Lite's config has them (llama.cpp scales the
  // scores by (0.1 mscale_all_dim ln factor + 1)^2 instead of the RoPE's cos and sin)
  if (c.yarn) config.rope_scaling = {rope_type: "yarn", factor: 4.0, original_max_position_embeddings: 128,
                                     ...(c.arch === "deepseek2" ? {mscale: 0.707, mscale_all_dim: 0.707} : {})};
  const configPath = path.join(work, `${name}.json`), gguf = path.join(work, `${name}.gguf`);
  fs.writeFileSync(configPath, JSON.stringify(config));
  infer("gguf", "write", "-m", configPath, "-w", c.type, "--out", gguf, "-q");
  const prompt = JSON.parse(infer("tokenize", "-m", gguf, "--json", "--", sentence)).ids;
  const steps = 16;
  const lines = infer("run", "-m", gguf, "-w", "file", "--prompt-tokens", prompt.join(","), "-n", String(steps),
                      "--emit", "logits", "--kv", "f16", "-q").trim().split("\n").map(l => JSON.parse(l));
  const ours = lines.map(l => l.logits), generated = lines.map(l => l.token);
  const f32kv = infer("run", "-m", gguf, "-w", "file", "--prompt-tokens", prompt.join(","), "-n", String(steps),
                      "--emit", "logits", "--kv", "f32", "-q").trim().split("\n").map(l => JSON.parse(l).logits);

  const model = await llama.loadModel({modelPath: gguf});
  const context = await model.createContext({contextSize: 256, batchSize: 256, threads: 2});
  const sequence = context.getSequence();
  const input = [...prompt, ...generated.slice(0, steps - 1)];
  const results = await sequence.controlledEvaluate(
      input.map((t, i) => i >= prompt.length - 1 ? [t, {generateNext: {logits: true}}] : t));
  // Greedy tokens decided by KV precision (a near tie) stop the F32-KV comparison there.
  let sensitivity = 0, maxLogit = 0;
  for (let s = 0; s < steps; ++s) {
    for (let i = 0; i < ours[s].length; ++i) {
      sensitivity = Math.max(sensitivity, Math.abs(ours[s][i] - f32kv[s][i]));
      maxLogit = Math.max(maxLogit, Math.abs(ours[s][i]));
    }
    if (f32kv[s].indexOf(Math.max(...f32kv[s])) !== generated[s]) break;
  }
  const limit = bound(sensitivity, maxLogit);
  // A mixture of experts may meet a router near-tie: a token whose k-th and (k+1)-th experts score
  // within the engines' rounding of each other takes another expert in one engine, and that step's
  // logits move by far more than the bound while every other step stays within it. One such step
  // in 16 is allowed for a MoE model (reported with its size); an error in the model's arithmetic
  // (every control above) moves every step.
  const moe = ["num_local_experts", "num_experts", "n_routed_experts"].some(k => config[k] > 0);
  let worst = 0, agree = 0, ties = 0, disagree = 0, flipped = 0, flippedBy = 0;
  for (let s = 0; s < steps; ++s) {
    const theirs = new Float64Array(ours[s].length);
    for (const [id, logit] of results[prompt.length - 1 + s].next.logits) theirs[id] = logit;
    let stepWorst = 0;
    for (let i = 0; i < theirs.length; ++i) stepWorst = Math.max(stepWorst, Math.abs(theirs[i] - ours[s][i]));
    if (moe && stepWorst > limit && flipped === 0) {
      flipped = 1;
      flippedBy = stepWorst;
    } else {
      worst = Math.max(worst, stepWorst);
    }
    const order = [...theirs.keys()].sort((a, b) => theirs[b] - theirs[a]);
    const oursTop = ours[s].indexOf(Math.max(...ours[s]));
    if (oursTop === order[0]) ++agree;
    else if (theirs[order[0]] - theirs[order[1]] <= 2 * limit) ++ties;
    else ++disagree;
  }
  await context.dispose();
  await model.dispose();
  // The control: had the YaRN keys been ignored, the unscaled model's logits would be compared.
  // At the last position (the whole sequence as a prompt, one step) they must lie beyond the
  // bound, or the check could not tell.
  const key = `${c.arch}-${c.type}`;
  let control = "";
  if (!c.yarn) unscaledGguf.set(key, gguf);
  else if (unscaledGguf.has(key)) {
    const last = new Float64Array(ours[0].length);
    for (const [id, logit] of results[results.length - 1].next.logits) last[id] = logit;
    const unscaled = JSON.parse(infer("run", "-m", unscaledGguf.get(key), "-w", "file", "--prompt-tokens", input.join(","),
                                      "-n", "1", "--emit", "logits", "--kv", "f16", "-q").trim()).logits;
    const moved = Math.max(...unscaled.map((v, i) => Math.abs(v - last[i])));
    control = `; unscaled ${moved.toFixed(3)} away${moved <= limit ? " (within the bound: this model cannot tell)" : ""}`;
    if (moved > limit) yarnSeen.add(c.arch);
  }
  const ok = worst <= limit && disagree === 0;
  if (!ok) ++failures;
  rows.push(`${ok ? "ok  " : "FAIL"} ${name.padEnd(16)} max |dlogit| ${worst.toFixed(4)} <= bound ${limit.toFixed(4)} ` +
            `(S ${sensitivity.toFixed(4)}, max |logit| ${maxLogit.toFixed(2)}); top-1 ${agree}/${steps} agree, ${ties} ` +
            `near ties, ${disagree} differ${flipped ? `; 1 step at a router near-tie (${flippedBy.toFixed(3)})` : ""}${control}`);
  console.log(rows[rows.length - 1]);
}

// Each architecture must have shown, on at least one type, that the check sees YaRN.
for (const arch of new Set(cases.map(c => c.arch)))
  if (cases.some(c => c.arch === arch && c.yarn) && !yarnSeen.has(arch)) {
    console.log(`FAIL ${arch}: no model moved beyond the bound without YaRN, so the YaRN cases prove nothing`);
    ++failures;
  }

// Tokenizer: the same ids from both, for Qwen's pre-tokenizer (qwen3's file) and Llama 3's.
function strings() {
  const fixed = [
    " ", "  ", "\n", "\n\n", "\t", " \n ", "a", "Hello", "Hello, world!", " Hello world ", "hello   world",
    "I'm here; you're there; it's done; we've won; they'll see; I'd go; HE'S", "don't DON'T Don't",
    "1", "12", "123", "1234", "12345678901234567890", "3.14159", "1,000,000", "v1.2.3", "0x1F", "2026-12-02T05:01:00Z",
    "def f(x):\n    return x * 2\n", "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}", "if(a&&b||!c){}",
    "<|im_start|>user\nHi<|im_end|>", "<|endoftext|>", "<|begin_of_text|>x", "<|im_start|><|im_end|>",
    "大型语言模型", "日本語のテキスト", "한국어 문장", "Привет, мир!", "Γειά σου", "naïve café résumé façade",
    "🚀", "🚀🚀🚀", "emoji 👍🏽 with skin tone", "👨‍👩‍👧 family", "flags 🇩🇪🇯🇵", "é (composed) vs é (decomposed)",
    "tabs\tand\tmore\t\ttabs", "trailing spaces   ", "   leading spaces", "line\r\nwindows\r\n", "\u00a0non-breaking",
    "zero\u200bwidth", "mixed 中文 and English 123", "$19.99 €100 £50 ¥1000", "a.b,c;d:e!f?g", "((((nested))))",
    "\"quoted\" 'single'", "email@example.com https://example.com/path?q=1&r=2#frag", "snake_case camelCase PascalCase",
    "ALLCAPS WORDS HERE", "     \n     \n", "\u3000ideographic space", "ﬁ ligature", "Ω ≈ ∑ ∞ ≤ ≥ ± × ÷",
  ];
  // Seeded draws from character classes, so the set is the same on every run.
  let seed = 12345;
  const rand = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
  const classes = ["abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789", " ", "  ", "\n", "\t",
                   ".,;:!?'\"()[]{}<>-_=+*/\\|@#$%^&~`", "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年",
                   "àáâãäåæçèéêëìíîïñòóôõöùúûüý", "абвгдеёжзийклмнопрстуфхцчшщъыьэюя", "🚀👍🙂✨🎉🔥💡"];
  const drawn = [];
  for (let n = 0; n < 240; ++n) {
    let text = "";
    const pieces = 1 + Math.floor(rand() * 12);
    for (let p = 0; p < pieces; ++p) {
      const chars = [...classes[Math.floor(rand() * classes.length)]];
      const run = 1 + Math.floor(rand() * 6);
      for (let k = 0; k < run; ++k) text += chars[Math.floor(rand() * chars.length)];
    }
    drawn.push(text);
  }
  return [...fixed, ...drawn];
}

const texts = strings();
// SentencePiece (Llama 2, Mistral): the llama shape with a synthetic SentencePiece vocabulary.
const spm = path.join(work, "llama-spm.gguf");
infer("gguf", "write", "-m", path.join(here, "models", "llama.json"), "-w", "F16", "--vocab", "spm", "--out", spm, "-q");
for (const arch of ["qwen3", "llama", "spm"]) {
  const gguf = arch === "spm" ? spm : path.join(work, `${arch}-F16.gguf`);
  if (!fs.existsSync(gguf)) continue;
  const model = await llama.loadModel({modelPath: gguf});
  let same = 0;
  const differing = [];
  const list = path.join(work, "strings.jsonl");
  fs.writeFileSync(list, texts.map(t => JSON.stringify(t)).join("\n") + "\n");
  const ourIds = infer("tokenize", "-m", gguf, "--no-special", "--jsonl", list).trim().split("\n").map(l => JSON.parse(l).ids);
  for (const [i, text] of texts.entries()) {
    const theirs = [...model.tokenize(text, true)];
    const ours = ourIds[i];
    if (JSON.stringify(theirs) === JSON.stringify(ours)) ++same;
    else differing.push(`${JSON.stringify(text)}: llama.cpp ${JSON.stringify(theirs)}, infer-plan ${JSON.stringify(ours)}`);
  }
  await model.dispose();
  const pre = arch === "llama" ? "llama-bpe" : arch === "spm" ? "SentencePiece" : "qwen2";
  console.log(`${differing.length ? "FAIL" : "ok  "} tokenizer ${pre}: ${same}/${texts.length} strings give the same ids`);
  for (const d of differing.slice(0, 10)) console.log(`     ${d}`);
  if (differing.length) ++failures;
}
// A built-in model's shape at a tenth, written as llama.cpp's file type: llama.cpp loads it and
// evaluates a token (GPT-OSS with its experts in MXFP4, the rest Q8_0; DeepSeek-V2-Lite's latent
// attention, which the runtime does not run yet, with fewer layers than llama.cpp's Lite rule knows;
// GLM-4.5-Air, MiniMax-M2, Qwen3-Next, Qwen3.5 and Llama 4, which the runtime does not run: their
// keys and tensors as llama.cpp's glm4moe, minimax-m2, qwen3next, qwen35moe and llama4 read them).
for (const [model, type] of [["gpt-oss-20b", "MXFP4_MOE"], ["deepseek-v2-lite", "Q8_0"], ["glm-4.5-air", "Q8_0"],
                             ["minimax-m2", "Q8_0"], ["qwen3-next-80b-a3b", "Q8_0"],
                             ["qwen3.5-35b-a3b", "Q8_0"], ["llama-4-maverick", "Q8_0"]]) {
  const gguf = path.join(work, `${model}-${type}.gguf`);
  infer("gguf", "write", "-m", model, "--scale", "0.1", "-w", type, "--out", gguf, "-q");
  let verdict;
  try {
    const m = await llama.loadModel({modelPath: gguf});
    const context = await m.createContext({contextSize: 64, batchSize: 64, threads: 2});
    const out = await context.getSequence().controlledEvaluate([[1, {generateNext: {logits: true}}]]);
    const logits = [...out[0].next.logits.values()];
    verdict = logits.length > 0 && logits.every(Number.isFinite) ? "" : "no finite logits";
    await context.dispose();
    await m.dispose();
  } catch (e) {
    verdict = e.message.split("\n")[0];
  }
  console.log(`${verdict ? "FAIL" : "ok  "} ${model}@0.1 ${type}: llama.cpp loads it and evaluates a token${verdict ? `: ${verdict}` : ""}`);
  if (verdict) ++failures;
}
process.exit(failures ? 1 : 0);
