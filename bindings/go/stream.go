package tessera

// #include "tessera/tessera.h"
import "C"

import (
	"context"
	"unsafe"
)

// Seq is a sequence of values pushed to yield until it returns false: the shape of Go 1.23's
// iter.Seq (the same underlying type, so on newer Go a Seq converts to iter.Seq[V] and ranges
// with for ... range). Go 1.19 has neither, hence a local type.
type Seq[V any] func(yield func(V) bool)

// Token is one generated token and the text that became final with it (possibly empty: UTF-8
// still incomplete, or text held back while it may start a stop string). A token with ID -1
// carries text released when generation ended.
type Token struct {
	ID   int32
	Text string
}

// Message is one chat turn; the model's own chat template renders them.
type Message struct {
	Role    string // "system", "user", "assistant", ...
	Content string
}

// Prompt is text (tokenized, BOS added unless WithoutSpecialTokens) or, when IDs is not nil,
// token ids.
type Prompt struct {
	Text string
	IDs  []int32
}

// Result is how a generation ended.
type Result struct {
	IDs          []int32 // generated ids (stop tokens left out)
	Text         string  // their text (stop strings left out)
	FinishReason string  // "stop", "length", "cancelled" or "error"
	Metrics      GenerateMetrics
}

// Stream is one generation, run as its token sequence is iterated: it submits the request,
// yields each token as the engine makes it and, when the consumer stops early, cancels the
// request and waits for its KV blocks to be released before returning. It can be iterated once.
// Its Err and Result are this call's own, whatever other goroutines do on the Model.
type Stream struct {
	m      *Model
	ctx    context.Context
	cfg    config
	submit func(c *call, a *cArena, o *C.tessera_generate_options, out **C.tessera_stream, msg **C.char) C.tessera_status

	started bool
	err     error
	result  Result
}

// Generate streams the continuation of prompt. Iterate it once; then Err tells a normal end
// (nil) from an error or a cancellation (ctx.Err()).
func (m *Model) Generate(ctx context.Context, prompt string, opts ...Option) Seq[Token] {
	return m.Stream(ctx, Prompt{Text: prompt}, opts...).Tokens()
}

// Chat streams the assistant's reply to messages, rendered with the model's chat template.
func (m *Model) Chat(ctx context.Context, messages []Message, opts ...Option) Seq[Token] {
	return m.ChatStream(ctx, messages, opts...).Tokens()
}

// Stream is Generate with the call's own Err and Result.
func (m *Model) Stream(ctx context.Context, p Prompt, opts ...Option) *Stream {
	s := &Stream{m: m, ctx: ctx, cfg: generateConfig(opts)}
	s.submit = func(c *call, a *cArena, o *C.tessera_generate_options, out **C.tessera_stream, msg **C.char) C.tessera_status {
		if p.IDs != nil {
			return C.tessera_stream_submit_tokens(c.e, a.ids(p.IDs), C.size_t(len(p.IDs)), o, out, msg)
		}
		return C.tessera_stream_submit(c.e, a.str(p.Text), o, out, msg)
	}
	return s
}

// ChatStream is Chat with the call's own Err and Result.
func (m *Model) ChatStream(ctx context.Context, messages []Message, opts ...Option) *Stream {
	s := &Stream{m: m, ctx: ctx, cfg: generateConfig(opts)}
	s.submit = func(c *call, a *cArena, o *C.tessera_generate_options, out **C.tessera_stream, msg **C.char) C.tessera_status {
		roles := make([]string, len(messages))
		contents := make([]string, len(messages))
		for i, m := range messages {
			roles[i], contents[i] = m.Role, m.Content
		}
		return C.tessera_stream_submit_chat(c.e, a.strs(roles), a.strs(contents),
			C.size_t(len(messages)), o, out, msg)
	}
	return s
}

// Err is the stream's error once iterated: nil for a normal end or a consumer that stopped
// early, ctx.Err() when the context ended it, ErrClosed when Close did, else an *Error.
func (s *Stream) Err() error { return s.err }

// Result is how the generation ended (partial when cancelled).
func (s *Stream) Result() Result { return s.result }

// Tokens is the stream's token sequence.
func (s *Stream) Tokens() Seq[Token] {
	return func(yield func(Token) bool) {
		if s.started {
			s.finish(&Error{Status: StatusInvalidArgument, Message: "a stream can be iterated once"})
			return
		}
		s.started = true
		s.run(yield)
	}
}

func (s *Stream) finish(err error) {
	s.err = err
	s.m.setLast(err, s.result.Metrics)
}

func (s *Stream) run(yield func(Token) bool) {
	c, err := s.m.begin(s.ctx)
	if err != nil {
		s.finish(err)
		return
	}
	defer c.end()
	var a cArena
	o := s.cfg.generateOptions(&a, c.cancel)
	var h *C.tessera_stream
	var msg *C.char
	st := s.submit(c, &a, &o, &h, &msg)
	a.free()
	if err := errorFrom(st, msg); err != nil {
		s.finish(err)
		return
	}
	defer C.tessera_stream_free(h)
	stopped := false // the consumer returned false: no more yields, drain to the end
	var ev C.tessera_event
	for {
		// Blocks this goroutine's thread in C until the next event; a cancellation (the
		// context's watcher, Close, an early stop) makes the DONE event come soon after.
		if st := C.tessera_stream_next(h, -1, &ev); st != C.TESSERA_OK {
			s.finish(&Error{Status: Status(st), Message: "reading the stream failed"})
			return
		}
		if ev.kind == C.TESSERA_EVENT_DONE {
			break
		}
		if ev.kind != C.TESSERA_EVENT_TOKEN || stopped {
			continue
		}
		t := Token{ID: int32(ev.id), Text: C.GoStringN(ev.piece, C.int(ev.piece_len))}
		if !yield(t) {
			stopped = true
			C.tessera_stream_cancel(h)
		}
	}
	r := ev.result
	s.result = Result{
		IDs:          goIDs(r.ids, r.n_ids),
		Text:         C.GoString(r.text),
		FinishReason: C.GoString(r.finish_reason),
		Metrics:      goMetrics(&r.metrics),
	}
	s.finish(resultErr(c, s.ctx, r, stopped))
}

// resultErr maps a C result's status to the Go error.
func resultErr(c *call, ctx context.Context, r *C.tessera_result, stopped bool) error {
	switch r.status {
	case C.TESSERA_OK:
		return nil
	case C.TESSERA_CANCELLED:
		if stopped {
			return nil
		}
		return c.cancelledErr(ctx)
	}
	msg := ""
	if r.error != nil {
		msg = C.GoString(r.error)
	}
	return &Error{Status: Status(r.status), Message: msg}
}

// tokensOf splits a result's text into its tokens' pieces (tessera_result.piece_ends), with a
// last ID -1 token for text released at the end, as a stream yields them.
func tokensOf(r *C.tessera_result) []Token {
	n := int(r.n_ids)
	text := C.GoString(r.text)
	toks := make([]Token, 0, n+1)
	if n == 0 {
		if text != "" {
			toks = append(toks, Token{ID: -1, Text: text})
		}
		return toks
	}
	ids := unsafe.Slice(r.ids, n)
	ends := unsafe.Slice(r.piece_ends, n)
	at := 0
	for i := 0; i < n; i++ {
		end := int(ends[i])
		toks = append(toks, Token{ID: int32(ids[i]), Text: text[at:end]})
		at = end
	}
	if at < len(text) {
		toks = append(toks, Token{ID: -1, Text: text[at:]})
	}
	return toks
}
