package tessera

// #include "tessera/tessera.h"
import "C"

import (
	"context"
	"time"
	"unsafe"
)

// BatchResult is one prompt's generation in a batch.
type BatchResult struct {
	Tokens []Token // as a stream yields them (a last ID -1 token carries text released at the end)
	// Err is this prompt's own failure (an *Error), or ctx.Err() when the batch was cancelled
	// (Tokens then holds what it had generated).
	Err          error
	Text         string
	FinishReason string
	Metrics      GenerateMetrics
}

// ClassifyResult is the next token at the end of one prompt.
type ClassifyResult struct {
	Token        Token
	Logits       []float32 // the full row, only with WithLogits()
	Logprob      float32   // of Token
	TopLogprobs  []TokenLogprob
	PromptTokens int
	// Err is this prompt's own failure, or ctx.Err() for a prompt a cancellation left unrun.
	Err error
}

// TokenLogprob is a candidate next token.
type TokenLogprob struct {
	ID      int32
	Text    string
	Logprob float32
}

// BatchGenerate decodes the prompts together, each with its own stop conditions. Options out of
// range fail the call; each prompt's own failure is its result's Err. On cancellation it
// returns every prompt's partial tokens with Err = ctx.Err() and a nil error.
func (m *Model) BatchGenerate(ctx context.Context, prompts []string, opts ...Option) ([]BatchResult, error) {
	return m.BatchGeneratePrompts(ctx, textPrompts(prompts), opts...)
}

// BatchGeneratePrompts is BatchGenerate for prompts as text or token ids.
func (m *Model) BatchGeneratePrompts(ctx context.Context, prompts []Prompt, opts ...Option) ([]BatchResult, error) {
	cfg := generateConfig(opts)
	c, err := m.begin(ctx)
	if err != nil {
		m.setLast(err, GenerateMetrics{})
		return nil, err
	}
	defer c.end()
	var a cArena
	defer a.free()
	o := cfg.generateOptions(&a, c.cancel)
	ps := cPrompts(&a, prompts)
	var out C.tessera_batch_results
	var msg *C.char
	if err := errorFrom(C.tessera_batch_generate(c.e, ps, C.size_t(len(prompts)), &o, &out, &msg), msg); err != nil {
		m.setLast(err, GenerateMetrics{})
		return nil, err
	}
	defer C.tessera_batch_results_free(&out)
	rs := make([]BatchResult, int(out.n))
	metrics := batchMetrics(&out.metrics)
	for i, r := range unsafe.Slice(out.results, int(out.n)) {
		rs[i] = BatchResult{
			Tokens:       tokensOf(&r),
			Err:          resultErr(c, ctx, &r, false),
			Text:         C.GoString(r.text),
			FinishReason: C.GoString(r.finish_reason),
			Metrics:      goMetrics(&r.metrics),
		}
		metrics.CachedPromptTokens += rs[i].Metrics.CachedPromptTokens
		metrics.PrefillDuration = maxDuration(metrics.PrefillDuration, rs[i].Metrics.PrefillDuration)
		metrics.DecodeDuration = maxDuration(metrics.DecodeDuration, rs[i].Metrics.DecodeDuration)
		metrics.ActiveMemoryBytes = rs[i].Metrics.ActiveMemoryBytes
	}
	m.setLast(nil, metrics)
	return rs, nil
}

// Classify runs one forward per prompt and returns the next token at its end (the argmax
// unless WithTemperature says otherwise), its logits row with WithLogits() and the top
// candidates with WithTopLogprobs(n). Options out of range fail the call; a prompt's own
// failure is its result's Err. When ctx ends first it returns the results with the prompts
// not yet run failed with ctx.Err(), and ctx.Err().
func (m *Model) Classify(ctx context.Context, prompts []string, opts ...Option) ([]ClassifyResult, error) {
	return m.ClassifyPrompts(ctx, textPrompts(prompts), opts...)
}

// ClassifyPrompts is Classify for prompts as text or token ids.
func (m *Model) ClassifyPrompts(ctx context.Context, prompts []Prompt, opts ...Option) ([]ClassifyResult, error) {
	cfg := classifyConfig(opts)
	c, err := m.begin(ctx)
	if err != nil {
		m.setLast(err, GenerateMetrics{})
		return nil, err
	}
	defer c.end()
	var a cArena
	defer a.free()
	o := cfg.classifyOptions(c.cancel)
	ps := cPrompts(&a, prompts)
	var out C.tessera_classify_results
	var msg *C.char
	if err := errorFrom(C.tessera_classify(c.e, ps, C.size_t(len(prompts)), &o, &out, &msg), msg); err != nil {
		m.setLast(err, GenerateMetrics{})
		return nil, err
	}
	defer C.tessera_classify_results_free(&out)
	rs := make([]ClassifyResult, int(out.n))
	var callErr error
	for i, r := range unsafe.Slice(out.results, int(out.n)) {
		rs[i] = ClassifyResult{
			Token:        Token{ID: int32(r.token), Text: C.GoString(r.text)},
			Logprob:      float32(r.logprob),
			PromptTokens: int(r.prompt_tokens),
		}
		if r.n_logits > 0 {
			rs[i].Logits = make([]float32, int(r.n_logits))
			copy(rs[i].Logits, unsafe.Slice((*float32)(unsafe.Pointer(r.logits)), int(r.n_logits)))
		}
		for _, t := range unsafe.Slice(r.top_logprobs, int(r.n_top_logprobs)) {
			rs[i].TopLogprobs = append(rs[i].TopLogprobs,
				TokenLogprob{ID: int32(t.id), Text: C.GoString(t.text), Logprob: float32(t.logprob)})
		}
		switch {
		case r.status == C.TESSERA_CANCELLED:
			rs[i].Err = c.cancelledErr(ctx)
			callErr = rs[i].Err
		case r.status != C.TESSERA_OK:
			rs[i].Err = &Error{Status: Status(r.status), Message: C.GoString(r.error)}
		}
	}
	metrics := batchMetrics(&out.metrics)
	m.setLast(callErr, metrics)
	return rs, callErr
}

func textPrompts(texts []string) []Prompt {
	ps := make([]Prompt, len(texts))
	for i, t := range texts {
		ps[i] = Prompt{Text: t}
	}
	return ps
}

// cPrompts is prompts as a C array in a's memory.
func cPrompts(a *cArena, prompts []Prompt) *C.tessera_prompt {
	p := (*C.tessera_prompt)(a.alloc(len(prompts) * int(unsafe.Sizeof(C.tessera_prompt{}))))
	arr := unsafe.Slice(p, len(prompts))
	for i, pr := range prompts {
		if pr.IDs != nil {
			arr[i].ids = a.ids(pr.IDs)
			arr[i].n_ids = C.size_t(len(pr.IDs))
		} else {
			arr[i].text = a.str(pr.Text)
		}
	}
	return p
}

func batchMetrics(b *C.tessera_batch_metrics) GenerateMetrics {
	return GenerateMetrics{
		PromptTokens:        int(b.prompt_tokens),
		GeneratedTokens:     int(b.generated_tokens),
		TotalDuration:       ms(b.total_ms),
		PrefillTokensPerSec: float64(b.prompt_tokens_per_s),
		DecodeTokensPerSec:  float64(b.generated_tokens_per_s),
		PeakMemoryBytes:     uint64(b.peak_memory_bytes),
	}
}

func maxDuration(a, b time.Duration) time.Duration {
	if a > b {
		return a
	}
	return b
}
