package tessera

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestSixtyFourGoroutinesAtOnce(t *testing.T) {
	m := shared(t)
	ctx := context.Background()
	opts := []Option{WithTemperature(0), WithMaxTokens(12)}
	want := make([]string, len(batchPrompts))
	for i, p := range batchPrompts {
		toks, err := collectStream(m.Stream(ctx, Prompt{Text: p}, opts...))
		if err != nil {
			t.Fatal(err)
		}
		want[i] = fmt.Sprint(toks)
	}
	const n = 64
	got := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := 0; g < n; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			<-start
			p := batchPrompts[g%len(batchPrompts)]
			var toks []Token
			switch g % 4 { // every method at once
			case 0, 1:
				s := m.Stream(ctx, Prompt{Text: p}, opts...)
				toks, errs[g] = collectStream(s)
			case 2:
				var rs []BatchResult
				if rs, errs[g] = m.BatchGenerate(ctx, []string{p}, opts...); errs[g] == nil {
					toks, errs[g] = rs[0].Tokens, rs[0].Err
				}
			case 3:
				var text string
				b := &Backend{model: m}
				text, errs[g] = b.Generate(ctx, p, GenOpts{MaxTokens: 12})
				toks = nil
				got[g] = text
				return
			}
			got[g] = fmt.Sprint(toks)
		}(g)
	}
	close(start)
	wg.Wait()
	for g := 0; g < n; g++ {
		if errs[g] != nil {
			t.Fatalf("goroutine %d: %v", g, errs[g])
		}
		w := want[g%len(batchPrompts)]
		if g%4 == 3 {
			continue // text only: checked below
		}
		if got[g] != w {
			t.Errorf("goroutine %d: %s, alone %s", g, got[g], w)
		}
	}
	for g := 3; g < n; g += 4 {
		alone, _ := collectStream(m.Stream(ctx, Prompt{Text: batchPrompts[g%len(batchPrompts)]}, opts...))
		if got[g] != textOf(alone) {
			t.Errorf("goroutine %d: %q, alone %q", g, got[g], textOf(alone))
		}
	}
	settles(t, m)
}

func TestCancelAStreamMidWay(t *testing.T) {
	m := shared(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := m.Stream(ctx, Prompt{Text: kingPrompt}, WithTemperature(0), WithMaxTokens(200),
		WithIgnoreEOS())
	n := 0
	s.Tokens()(func(Token) bool {
		if n++; n == 3 {
			cancel() // from the consumer; the stream ends at the scheduler's next step
		}
		return true
	})
	if !errors.Is(s.Err(), context.Canceled) || m.Err() != s.Err() {
		t.Fatalf("err %v (model's %v)", s.Err(), m.Err())
	}
	r := s.Result()
	if r.FinishReason != "cancelled" || len(r.IDs) < 3 || len(r.IDs) >= 200 {
		t.Errorf("result %s with %d ids", r.FinishReason, len(r.IDs))
	}
	settles(t, m)

	// A deadline cancels too, with its own error.
	dctx, dcancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer dcancel()
	s = m.Stream(dctx, Prompt{Text: kingPrompt}, WithMaxTokens(200), WithIgnoreEOS())
	collectStream(s)
	if !errors.Is(s.Err(), context.DeadlineExceeded) {
		t.Errorf("deadline: %v (%d ids)", s.Err(), len(s.Result().IDs))
	}
	// Already cancelled: nothing runs.
	s = m.Stream(ctx, Prompt{Text: kingPrompt})
	if toks, err := collectStream(s); !errors.Is(err, context.Canceled) || len(toks) != 0 {
		t.Errorf("pre-cancelled: %v %v", toks, err)
	}
	settles(t, m)
}

func TestAStreamStoppedEarlyCancelsAndFreesItsKV(t *testing.T) {
	m := shared(t)
	n := 0
	for tok := range chanOfN(m.Generate(context.Background(), kingPrompt, WithMaxTokens(200),
		WithIgnoreEOS()), 2) {
		_ = tok
		n++
	}
	if n != 2 || m.Err() != nil {
		t.Fatalf("%d tokens, err %v", n, m.Err())
	}
	if m.Metrics().GeneratedTokens >= 200 {
		t.Errorf("metrics %+v", m.Metrics())
	}
	settles(t, m)
	// A stream iterates once.
	s := m.Stream(context.Background(), Prompt{Text: "x"}, WithMaxTokens(1))
	collectStream(s)
	if _, err := collectStream(s); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("second iteration: %v", err)
	}
}

// chanOfN yields the first n values of seq, then stops it (the Go 1.23 `break`).
func chanOfN[V any](seq Seq[V], n int) <-chan V {
	ch := make(chan V, n)
	go func() {
		defer close(ch)
		i := 0
		seq(func(v V) bool {
			ch <- v
			i++
			return i < n
		})
	}()
	return ch
}

func TestCancelABatchMidWay(t *testing.T) {
	m := shared(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	whenGenerated(t, m, 24, cancel)
	rs, err := m.BatchGenerate(ctx, batchPrompts, WithTemperature(0), WithMaxTokens(200),
		WithIgnoreEOS())
	if err != nil {
		t.Fatal(err)
	}
	partial := 0
	for i, r := range rs {
		if !errors.Is(r.Err, context.Canceled) || r.FinishReason != "cancelled" {
			t.Errorf("prompt %d: %v %s", i, r.Err, r.FinishReason)
		}
		if len(idsOf(r.Tokens)) >= 200 || len(idsOf(r.Tokens)) != r.Metrics.GeneratedTokens {
			t.Errorf("prompt %d: %d tokens, metrics %d", i, len(r.Tokens), r.Metrics.GeneratedTokens)
		}
		if len(r.Tokens) > 0 {
			partial++
		}
	}
	if partial == 0 {
		t.Error("no partial results")
	}
	settles(t, m)
}

func TestCancelAClassifyMidWay(t *testing.T) {
	// Small steps, so that the prompts take many: a cancellation after a few leaves some run and
	// the rest not.
	m := loadTiny(t, WithBatchTokens(64), WithMaxSeqs(4))
	prompts := make([]string, 120)
	for i := range prompts {
		prompts[i] = fmt.Sprintf("%d: And the LORD spake unto Moses, saying, Speak unto the children of Israel", i)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		defer cancel()
		for i := 0; i < 10000; i++ {
			if s, err := m.Stats(); err != nil || s.Steps >= 4 {
				return
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	rs, err := m.Classify(ctx, prompts)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	done, cancelled := 0, 0
	for i, r := range rs {
		switch {
		case r.Err == nil && r.Token.ID >= 0:
			done++
		case errors.Is(r.Err, context.Canceled):
			cancelled++
		default:
			t.Errorf("prompt %d: %+v", i, r)
		}
	}
	if done == 0 || cancelled == 0 {
		t.Errorf("%d classified, %d cancelled", done, cancelled)
	}
	settles(t, m)
}

func TestCloseCancelsCallsInFlight(t *testing.T) {
	m := loadTiny(t)
	started := make(chan struct{})
	var s *Stream
	done := make(chan struct{})
	go func() {
		defer close(done)
		s = m.Stream(context.Background(), Prompt{Text: kingPrompt}, WithMaxTokens(200), WithIgnoreEOS())
		first := true
		s.Tokens()(func(Token) bool {
			if first {
				close(started)
				first = false
			}
			return true
		})
	}()
	select {
	case <-started:
	case <-done: // ended before its first token: the test cannot show anything
		t.Fatalf("the stream ended at once: %v", s.Err())
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	<-done
	if !errors.Is(s.Err(), ErrClosed) {
		t.Errorf("in flight at Close: %v", s.Err())
	}
	if _, err := m.Stats(); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
	if _, err := m.BatchGenerate(context.Background(), []string{"x"}); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
	if m.Close() != nil {
		t.Error("second Close")
	}
}
