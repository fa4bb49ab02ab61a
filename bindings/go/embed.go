package tessera

// #include "tessera/tessera.h"
import "C"

import (
	"context"
	"unsafe"
)

// Pooling is how Embed reduces a prompt's final hidden states to one vector
// (sentence-transformers' pooling modes).
type Pooling int

const (
	PoolingAuto Pooling = C.TESSERA_POOLING_AUTO // the last token's (a causal decoder's)
	PoolingMean Pooling = C.TESSERA_POOLING_MEAN
	PoolingCLS  Pooling = C.TESSERA_POOLING_CLS // the first position's
	PoolingLast Pooling = C.TESSERA_POOLING_LAST
)

// WithPooling picks Embed's pooling (default PoolingAuto).
func WithPooling(p Pooling) Option { return func(c *config) { c.pooling = p } }

// WithoutNormalize leaves Embed's vectors as pooled (default: unit L2 norm).
func WithoutNormalize() Option { return func(c *config) { c.noNormalize = true } }

// WithDimensions keeps the first n values of each embedding (Matryoshka truncation), then
// normalises; n must be within the model's EmbeddingSize.
func WithDimensions(n int) Option { return func(c *config) { c.dimensions = n } }

// WithPromptName puts a sentence-transformers model's named prompt
// (config_sentence_transformers.json) before each text prompt.
func WithPromptName(name string) Option { return func(c *config) { c.promptName = name } }

// EmbedResult is one prompt's embedding.
type EmbedResult struct {
	Embedding    []float32
	PromptTokens int
	// Err is this prompt's own failure, or ctx.Err() for a prompt a cancellation left unrun.
	Err error
}

// EmbeddingSize is the length of an embedding without WithDimensions (the hidden size).
func (m *Model) EmbeddingSize() int {
	c, err := m.begin(context.Background())
	if err != nil {
		return 0
	}
	defer c.end()
	return int(C.tessera_embedding_size(c.e))
}

// Embed runs one prefill per prompt and pools its final hidden states (WithPooling,
// WithoutNormalize, WithDimensions). Options out of range fail the call; a prompt's own
// failure is its result's Err. When ctx ends first the prompts not yet run fail with ctx.Err(),
// which is also returned.
func (m *Model) Embed(ctx context.Context, prompts []string, opts ...Option) ([]EmbedResult, error) {
	return m.EmbedPrompts(ctx, textPrompts(prompts), opts...)
}

// EmbedPrompts is Embed for prompts as text or token ids.
func (m *Model) EmbedPrompts(ctx context.Context, prompts []Prompt, opts ...Option) ([]EmbedResult, error) {
	cfg := classifyConfig(opts)
	c, err := m.begin(ctx)
	if err != nil {
		m.setLast(err, GenerateMetrics{})
		return nil, err
	}
	defer c.end()
	var a cArena
	defer a.free()
	var o C.tessera_embed_options
	C.tessera_embed_options_init(&o)
	o.pooling = C.tessera_pooling(cfg.pooling)
	o.normalize = cBool(!cfg.noNormalize)
	o.dimensions = C.int32_t(clampInt32(cfg.dimensions))
	o.add_special_tokens = cBool(cfg.addSpecial)
	if cfg.promptName != "" {
		o.prompt_name = a.str(cfg.promptName)
	}
	o.cancel = c.cancel
	ps := cPrompts(&a, prompts)
	var out C.tessera_embed_results
	var msg *C.char
	if err := errorFrom(C.tessera_embed(c.e, ps, C.size_t(len(prompts)), &o, &out, &msg), msg); err != nil {
		m.setLast(err, GenerateMetrics{})
		return nil, err
	}
	defer C.tessera_embed_results_free(&out)
	rs := make([]EmbedResult, int(out.n))
	var callErr error
	for i, r := range unsafe.Slice(out.results, int(out.n)) {
		rs[i].PromptTokens = int(r.prompt_tokens)
		if r.n_embedding > 0 {
			rs[i].Embedding = make([]float32, int(r.n_embedding))
			copy(rs[i].Embedding, unsafe.Slice((*float32)(unsafe.Pointer(r.embedding)), int(r.n_embedding)))
		}
		switch {
		case r.status == C.TESSERA_CANCELLED:
			rs[i].Err = c.cancelledErr(ctx)
			callErr = rs[i].Err
		case r.status != C.TESSERA_OK:
			rs[i].Err = &Error{Status: Status(r.status), Message: C.GoString(r.error)}
		}
	}
	m.setLast(callErr, batchMetrics(&out.metrics))
	return rs, callErr
}
