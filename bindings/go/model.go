package tessera

// #include <stdlib.h>
// #include "tessera/tessera.h"
import "C"

import (
	"context"
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// Model is one loaded model and its engine. Every method may be called from any number of
// goroutines at once: the engine's scheduler batches the requests together.
type Model struct {
	dir  string
	info ModelInfo

	mu       sync.Mutex
	idle     chan struct{} // made by Close while calls are in flight, closed by the last
	e        *C.tessera_engine
	closed   bool
	inflight int
	cancels  map[*C.tessera_cancel]struct{} // of the calls in flight, for Close to trigger

	lastMu      sync.Mutex
	lastErr     error
	lastMetrics GenerateMetrics
}

// ModelInfo is what a loaded model is.
type ModelInfo struct {
	Architecture          string // e.g. "Gemma3ForCausalLM"
	ModelType             string // e.g. "gemma3_text"
	Device                string // e.g. "cpu"
	WeightDType           string // as held in memory: "f32", "bf16"
	VocabSize             int
	NumLayers             int
	HiddenSize            int
	IntermediateSize      int
	NumHeads, NumKVHeads  int
	HeadDim               int
	QuantBits, QuantGroup int // the format of most weight matrices; 0, 0: dense
	ContextLength         int // positions per sequence on this engine
	MaxPositionEmbeddings int
	SlidingWindow         int // 0: no layer slides
	TiedEmbeddings        bool
	ParameterCount        int64
	WeightBytes           uint64
	EOSTokenIDs           []int32 // the whole set generation stops on
	BOSTokenID            int32   // -1: none
	HasTokenizer          bool
	HasChatTemplate       bool
}

// GenerateMetrics are one call's figures (for a batch or a classification: sums, and rates over
// the call's wall-clock time).
type GenerateMetrics struct {
	PromptTokens        int
	CachedPromptTokens  int // whose KV came from the prefix cache
	GeneratedTokens     int
	TimeToFirstToken    time.Duration
	PrefillDuration     time.Duration
	DecodeDuration      time.Duration
	TotalDuration       time.Duration
	PrefillTokensPerSec float64
	DecodeTokensPerSec  float64
	PeakMemoryBytes     uint64 // tessera's allocations on the device, since load
	ActiveMemoryBytes   uint64 // at the end of the call
}

// Stats is a snapshot of the engine: its scheduler, KV pool and device memory.
type Stats struct {
	Running, Waiting            int
	KVBlocksUsed, KVBlocksTotal int
	KVBlockSize                 int
	MemoryActive, MemoryPeak    uint64
	MemoryLimit                 uint64 // 0: none
	Steps                       int64
	PromptTokens                int64
	GeneratedTokens             int64
	CachedPromptTokens          int64
	Preemptions                 int64
}

// Version is the C library's version ("MAJOR.MINOR.PATCH").
func Version() string { return C.GoString(C.tessera_version()) }

// LoadModel loads a Hugging Face-format model directory. Its errors are *Error values naming
// the file, key or tensor at fault (StatusIO for a missing directory).
func LoadModel(dir string, opts ...LoadOption) (*Model, error) {
	var lc loadConfig
	for _, o := range opts {
		o(&lc)
	}
	var a cArena
	defer a.free()
	eo := lc.engineOptions(&a, dir)
	var e *C.tessera_engine
	var msg *C.char
	if err := errorFrom(C.tessera_engine_load(&eo, &e, &msg), msg); err != nil {
		return nil, err
	}
	m := &Model{dir: dir, e: e, cancels: map[*C.tessera_cancel]struct{}{}}
	m.info = readInfo(e)
	// A safety net only: a Model dropped without Close frees its engine when collected. No call
	// can be in flight then, as each holds the Model. (Nothing in a Model points back at it, or
	// the cycle would keep the finalizer from running.)
	runtime.SetFinalizer(m, func(m *Model) { m.Close() })
	return m, nil
}

func readInfo(e *C.tessera_engine) ModelInfo {
	var i C.tessera_model_info
	var msg *C.char
	if errorFrom(C.tessera_model_info_get(e, &i, &msg), msg) != nil {
		return ModelInfo{}
	}
	eos := make([]int32, int(i.n_eos_token_ids))
	for k, id := range unsafe.Slice(i.eos_token_ids, int(i.n_eos_token_ids)) {
		eos[k] = int32(id)
	}
	return ModelInfo{
		Architecture: C.GoString(i.architecture), ModelType: C.GoString(i.model_type),
		Device: C.GoString(i.device), WeightDType: C.GoString(i.weight_dtype),
		VocabSize: int(i.vocab_size), NumLayers: int(i.num_layers), HiddenSize: int(i.hidden_size),
		IntermediateSize: int(i.intermediate_size), NumHeads: int(i.num_heads),
		NumKVHeads: int(i.num_kv_heads), HeadDim: int(i.head_dim),
		QuantBits: int(i.quant_bits), QuantGroup: int(i.quant_group_size),
		ContextLength: int(i.context_length), MaxPositionEmbeddings: int(i.max_position_embeddings),
		SlidingWindow: int(i.sliding_window), TiedEmbeddings: i.tied_embeddings != 0,
		ParameterCount: int64(i.parameter_count), WeightBytes: uint64(i.weight_bytes),
		EOSTokenIDs: eos, BOSTokenID: int32(i.bos_token_id),
		HasTokenizer: i.has_tokenizer != 0, HasChatTemplate: i.has_chat_template != 0,
	}
}

// Info describes the model (read once at load).
func (m *Model) Info() ModelInfo {
	i := m.info
	i.EOSTokenIDs = append([]int32(nil), i.EOSTokenIDs...)
	return i
}

// Dir is the model directory the Model was loaded from.
func (m *Model) Dir() string { return m.dir }

// Close cancels the calls in flight, waits for them to return and frees the engine. Calls after
// it return ErrClosed; a second Close does nothing.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	for c := range m.cancels {
		C.tessera_cancel_trigger(c)
	}
	if m.inflight > 0 {
		idle := make(chan struct{})
		m.idle = idle
		m.mu.Unlock()
		<-idle
		m.mu.Lock()
	}
	C.tessera_engine_free(m.e)
	m.e = nil
	runtime.SetFinalizer(m, nil)
	return nil
}

// call is one call in flight: it keeps the engine open and owns a cancel handle that the
// context and Close trigger.
type call struct {
	m      *Model
	e      *C.tessera_engine
	cancel *C.tessera_cancel
	stop   chan struct{} // closed when the call ends: the watcher leaves
	gone   chan struct{} // closed by the watcher as it leaves
}

func (m *Model) begin(ctx context.Context) (*call, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	c := &call{m: m, e: m.e, cancel: C.tessera_cancel_new()}
	if c.cancel == nil {
		m.mu.Unlock()
		return nil, ErrOutOfMemory
	}
	m.inflight++
	m.cancels[c.cancel] = struct{}{}
	m.mu.Unlock()
	if done := ctx.Done(); done != nil {
		c.stop, c.gone = make(chan struct{}), make(chan struct{})
		go func() {
			defer close(c.gone)
			select {
			case <-done:
				C.tessera_cancel_trigger(c.cancel)
			case <-c.stop:
			}
		}()
	}
	return c, nil
}

func (c *call) end() {
	if c.stop != nil {
		close(c.stop)
		<-c.gone // the watcher no longer touches the handle
	}
	m := c.m
	m.mu.Lock()
	delete(m.cancels, c.cancel)
	C.tessera_cancel_free(c.cancel)
	m.inflight--
	if m.inflight == 0 && m.idle != nil {
		close(m.idle)
		m.idle = nil
	}
	m.mu.Unlock()
}

// cancelledErr is the error of a request the engine reports cancelled: the context's when it
// ended, ErrClosed when Close cancelled it.
func (c *call) cancelledErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.m.mu.Lock()
	closed := c.m.closed
	c.m.mu.Unlock()
	if closed {
		return ErrClosed
	}
	return &Error{Status: StatusCancelled, Message: "cancelled"}
}

// Err is the error of the last call that ended on this Model (nil for a normal end, and for a
// stream whose consumer stopped early); ctx.Err() for a cancelled one. With calls in flight on
// several goroutines, "last" is whichever ended last: use Stream.Err for a call's own.
func (m *Model) Err() error {
	m.lastMu.Lock()
	defer m.lastMu.Unlock()
	return m.lastErr
}

// Metrics are the last call's figures (every call also returns its own: Stream.Result,
// BatchResult.Metrics).
func (m *Model) Metrics() GenerateMetrics {
	m.lastMu.Lock()
	defer m.lastMu.Unlock()
	return m.lastMetrics
}

func (m *Model) setLast(err error, metrics GenerateMetrics) {
	m.lastMu.Lock()
	m.lastErr, m.lastMetrics = err, metrics
	m.lastMu.Unlock()
}

// Stats is a snapshot of the engine's scheduler and memory.
func (m *Model) Stats() (Stats, error) {
	c, err := m.begin(context.Background())
	if err != nil {
		return Stats{}, err
	}
	defer c.end()
	var s C.tessera_engine_stats
	var msg *C.char
	if err := errorFrom(C.tessera_engine_stats_get(c.e, &s, &msg), msg); err != nil {
		return Stats{}, err
	}
	return Stats{
		Running: int(s.running), Waiting: int(s.waiting), KVBlocksUsed: int(s.kv_blocks_used),
		KVBlocksTotal: int(s.kv_blocks_total), KVBlockSize: int(s.kv_block_size),
		MemoryActive: uint64(s.memory_active), MemoryPeak: uint64(s.memory_peak),
		MemoryLimit: uint64(s.memory_limit), Steps: int64(s.steps),
		PromptTokens: int64(s.prompt_tokens), GeneratedTokens: int64(s.generated_tokens),
		CachedPromptTokens: int64(s.cached_prompt_tokens), Preemptions: int64(s.preemptions),
	}, nil
}

// Tokenize returns the token ids of text (with BOS when addSpecial, as Hugging Face does).
func (m *Model) Tokenize(text string, addSpecial bool) ([]int32, error) {
	c, err := m.begin(context.Background())
	if err != nil {
		return nil, err
	}
	defer c.end()
	var a cArena
	defer a.free()
	var ids *C.int32_t
	var n C.size_t
	var msg *C.char
	special := C.int(0)
	if addSpecial {
		special = 1
	}
	if err := errorFrom(C.tessera_tokenize(c.e, a.str(text), special, &ids, &n, &msg), msg); err != nil {
		return nil, err
	}
	defer C.tessera_ids_free(ids)
	return goIDs(ids, n), nil
}

// Detokenize returns the text of ids (special tokens left out).
func (m *Model) Detokenize(ids []int32) (string, error) {
	c, err := m.begin(context.Background())
	if err != nil {
		return "", err
	}
	defer c.end()
	var a cArena
	defer a.free()
	var text, msg *C.char
	if err := errorFrom(C.tessera_detokenize(c.e, a.ids(ids), C.size_t(len(ids)), &text, &msg), msg); err != nil {
		return "", err
	}
	defer C.tessera_string_free(text)
	return C.GoString(text), nil
}

func goIDs(p *C.int32_t, n C.size_t) []int32 {
	out := make([]int32, int(n))
	if n == 0 {
		return out
	}
	for i, id := range unsafe.Slice(p, int(n)) {
		out[i] = int32(id)
	}
	return out
}

func ms(v C.double) time.Duration { return time.Duration(float64(v) * float64(time.Millisecond)) }

func goMetrics(m *C.tessera_metrics) GenerateMetrics {
	return GenerateMetrics{
		PromptTokens: int(m.prompt_tokens), CachedPromptTokens: int(m.cached_prompt_tokens),
		GeneratedTokens: int(m.generated_tokens), TimeToFirstToken: ms(m.ttft_ms),
		PrefillDuration: ms(m.prefill_ms), DecodeDuration: ms(m.decode_ms),
		TotalDuration: ms(m.total_ms), PrefillTokensPerSec: float64(m.prefill_tokens_per_s),
		DecodeTokensPerSec: float64(m.decode_tokens_per_s),
		PeakMemoryBytes:    uint64(m.peak_memory_bytes), ActiveMemoryBytes: uint64(m.active_memory_bytes),
	}
}
