package tessera

// #include "tessera/tessera.h"
import "C"

// Option sets a generation's or a classification's parameters. Out-of-range values are not
// checked here: the engine reports them as an *Error (StatusInvalidArgument) naming the option.
type Option func(*config)

// config is one call's parameters. Generation starts from llama.cpp's sampling defaults
// (temperature 0.8, top-k 40, top-p 0.95, min-p 0.05, 256 tokens), classification from the
// argmax (temperature 0).
type config struct {
	temperature      float64
	topK             int
	topP, minP       float64
	repeatPenalty    float64
	presencePenalty  float64
	frequencyPenalty float64
	seed             int64 // < 0: from the clock
	maxTokens        int
	minTokens        int
	stopTokens       []int32
	stopStrings      []string
	ignoreEOS        bool
	addSpecial       bool
	logits           bool
	topLogprobs      int
	pooling          Pooling // embeddings (embed.go)
	noNormalize      bool
	dimensions       int
	promptName       string
	constraintKind   string // structured output: "json_object", "json_schema", "regex", "grammar"
	constraint       string
}

func generateConfig(opts []Option) config {
	c := config{temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05, repeatPenalty: 1, seed: -1,
		maxTokens: 256, addSpecial: true}
	for _, o := range opts {
		o(&c)
	}
	return c
}

func classifyConfig(opts []Option) config {
	c := config{temperature: 0, topP: 1, repeatPenalty: 1, seed: -1, addSpecial: true}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// WithMaxTokens caps the generated tokens (> 0; with the prompt, within the context).
func WithMaxTokens(n int) Option { return func(c *config) { c.maxTokens = n } }

// WithMinTokens suppresses EOS and stop tokens until n tokens are generated.
func WithMinTokens(n int) Option { return func(c *config) { c.minTokens = n } }

// WithTemperature sets the sampling temperature (>= 0); 0 is greedy, whatever else is set.
func WithTemperature(t float64) Option { return func(c *config) { c.temperature = t } }

// WithTopK keeps the k most likely tokens (0: off).
func WithTopK(k int) Option { return func(c *config) { c.topK = k } }

// WithTopP keeps the smallest set of tokens whose probability reaches p (in (0, 1]).
func WithTopP(p float64) Option { return func(c *config) { c.topP = p } }

// WithMinP drops tokens less likely than p times the most likely one (in [0, 1]).
func WithMinP(p float64) Option { return func(c *config) { c.minP = p } }

// WithSeed makes sampling reproducible: one seed, one text (negative: from the clock).
func WithSeed(s int64) Option { return func(c *config) { c.seed = s } }

// WithStopTokens adds token ids that end generation, beside the model's whole EOS set.
func WithStopTokens(ids ...int32) Option {
	return func(c *config) { c.stopTokens = append(c.stopTokens, ids...) }
}

// WithStopStrings adds strings that end generation (matched across tokens, never emitted).
func WithStopStrings(s ...string) Option {
	return func(c *config) { c.stopStrings = append(c.stopStrings, s...) }
}

// WithRepeatPenalty sets the repetition penalty (> 0; 1: off; transformers' semantics).
func WithRepeatPenalty(r float64) Option { return func(c *config) { c.repeatPenalty = r } }

// WithPresencePenalty and WithFrequencyPenalty are OpenAI's penalties (in [-2, 2]).
func WithPresencePenalty(p float64) Option { return func(c *config) { c.presencePenalty = p } }

// WithFrequencyPenalty: see WithPresencePenalty.
func WithFrequencyPenalty(p float64) Option { return func(c *config) { c.frequencyPenalty = p } }

// WithJSONSchema constrains the output to JSON valid under the schema (JSON text; OpenAI's strict
// subset, docs/GRAMMAR.md). A bad schema is the call's error, naming what is wrong.
func WithJSONSchema(schema string) Option {
	return func(c *config) { c.constraintKind, c.constraint = "json_schema", schema }
}

// WithJSONObject constrains the output to a JSON object.
func WithJSONObject() Option {
	return func(c *config) { c.constraintKind, c.constraint = "json_object", "" }
}

// WithRegex constrains the output to match the regular expression in full.
func WithRegex(re string) Option {
	return func(c *config) { c.constraintKind, c.constraint = "regex", re }
}

// WithGrammar constrains the output to a GBNF grammar (llama.cpp's format; start rule "root").
func WithGrammar(gbnf string) Option {
	return func(c *config) { c.constraintKind, c.constraint = "grammar", gbnf }
}

// WithIgnoreEOS generates exactly the maximum number of tokens (benchmarks).
func WithIgnoreEOS() Option { return func(c *config) { c.ignoreEOS = true } }

// WithoutSpecialTokens tokenizes text prompts without adding BOS.
func WithoutSpecialTokens() Option { return func(c *config) { c.addSpecial = false } }

// WithLogits makes Classify return the full logits row at each prompt's last position.
func WithLogits() Option { return func(c *config) { c.logits = true } }

// WithTopLogprobs makes Classify return the n most likely next tokens (0..20).
func WithTopLogprobs(n int) Option { return func(c *config) { c.topLogprobs = n } }

// generateOptions is c as the C ABI's options, its arrays in a's memory.
func (c *config) generateOptions(a *cArena, cancel *C.tessera_cancel) C.tessera_generate_options {
	var o C.tessera_generate_options
	C.tessera_generate_options_init(&o)
	o.temperature = C.float(c.temperature)
	o.top_k = C.int32_t(c.topK)
	o.top_p = C.float(c.topP)
	o.min_p = C.float(c.minP)
	o.repetition_penalty = C.float(c.repeatPenalty)
	o.presence_penalty = C.float(c.presencePenalty)
	o.frequency_penalty = C.float(c.frequencyPenalty)
	o.seed = C.int64_t(c.seed)
	o.max_tokens = C.int32_t(clampInt32(c.maxTokens))
	o.min_tokens = C.int32_t(clampInt32(c.minTokens))
	if len(c.stopStrings) > 0 {
		o.stop = a.strs(c.stopStrings)
		o.n_stop = C.size_t(len(c.stopStrings))
	}
	if len(c.stopTokens) > 0 {
		o.stop_token_ids = a.ids(c.stopTokens)
		o.n_stop_token_ids = C.size_t(len(c.stopTokens))
	}
	o.ignore_eos = cBool(c.ignoreEOS)
	o.add_special_tokens = cBool(c.addSpecial)
	o.cancel = cancel
	if c.constraintKind != "" {
		o.constraint_kind = a.str(c.constraintKind)
		o.constraint = a.str(c.constraint)
	}
	return o
}

func (c *config) classifyOptions(cancel *C.tessera_cancel) C.tessera_classify_options {
	var o C.tessera_classify_options
	C.tessera_classify_options_init(&o)
	o.temperature = C.float(c.temperature)
	o.top_k = C.int32_t(c.topK)
	o.top_p = C.float(c.topP)
	o.min_p = C.float(c.minP)
	o.seed = C.int64_t(c.seed)
	o.return_logits = cBool(c.logits)
	o.top_logprobs = C.int32_t(clampInt32(c.topLogprobs))
	o.add_special_tokens = cBool(c.addSpecial)
	o.cancel = cancel
	return o
}

// LoadOption sets how LoadModel loads a model.
type LoadOption func(*loadConfig)

type loadConfig struct {
	device, dtype           string
	contextLen, maxSeqs     int
	batchTokens, quantize   int
	memoryLimit, kvMemory   uint64
	noPrefixCache, noWarmup bool
}

// WithContextLen sets the positions per sequence (0: the model's, at most 32,768).
func WithContextLen(n int) LoadOption { return func(c *loadConfig) { c.contextLen = n } }

// WithDevice picks the device: "auto" (CUDA when available), "cpu" or "cuda".
func WithDevice(d string) LoadOption { return func(c *loadConfig) { c.device = d } }

// WithMemoryLimit caps the bytes tessera allocates on the device (weights, KV, activations);
// loading or a request that would exceed it fails with a clear error. 0: none.
func WithMemoryLimit(bytes uint64) LoadOption {
	return func(c *loadConfig) { c.memoryLimit = bytes }
}

// WithDType sets the weights' type in memory: "auto" (the checkpoint's), "f32" or "bf16".
func WithDType(t string) LoadOption { return func(c *loadConfig) { c.dtype = t } }

// WithKVMemory sets the KV pool's bytes (0: automatic).
func WithKVMemory(bytes uint64) LoadOption { return func(c *loadConfig) { c.kvMemory = bytes } }

// WithMaxSeqs sets how many sequences run at once (0: automatic, 16 on a CPU).
func WithMaxSeqs(n int) LoadOption { return func(c *loadConfig) { c.maxSeqs = n } }

// WithBatchTokens sets the tokens per forward step (0: automatic).
func WithBatchTokens(n int) LoadOption { return func(c *loadConfig) { c.batchTokens = n } }

// WithQuantize quantizes a dense checkpoint's matrices to 4 or 8 bits at load.
func WithQuantize(bits int) LoadOption { return func(c *loadConfig) { c.quantize = bits } }

// WithoutPrefixCache stops prompts with a common prefix from sharing KV blocks.
func WithoutPrefixCache() LoadOption { return func(c *loadConfig) { c.noPrefixCache = true } }

// WithoutWarmup skips the GPU warm-up at load (~0.25 s; the first request pays for it then).
func WithoutWarmup() LoadOption { return func(c *loadConfig) { c.noWarmup = true } }

func (c *loadConfig) engineOptions(a *cArena, dir string) C.tessera_engine_options {
	var o C.tessera_engine_options
	C.tessera_engine_options_init(&o)
	o.model_dir = a.str(dir)
	if c.device != "" {
		o.device = a.str(c.device)
	}
	if c.dtype != "" {
		o.dtype = a.str(c.dtype)
	}
	o.context_length = C.int32_t(clampInt32(c.contextLen))
	o.max_seqs = C.int32_t(clampInt32(c.maxSeqs))
	o.max_batch_tokens = C.int32_t(clampInt32(c.batchTokens))
	o.quantize = C.int32_t(clampInt32(c.quantize))
	o.memory_limit = C.uint64_t(c.memoryLimit)
	o.kv_memory = C.uint64_t(c.kvMemory)
	o.prefix_cache = cBool(!c.noPrefixCache)
	o.warmup = cBool(!c.noWarmup)
	return o
}

func cBool(b bool) C.int32_t {
	if b {
		return 1
	}
	return 0
}

// clampInt32 keeps an int within int32, so that a huge value reaches the engine as out of range
// rather than wrapped around to something valid.
func clampInt32(n int) int {
	const max, min = 1<<31 - 1, -1 << 31
	if n > max {
		return max
	}
	if n < min {
		return min
	}
	return n
}
