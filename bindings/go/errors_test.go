package tessera

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestBadInputIsAnErrorNeverACrash(t *testing.T) {
	_, err := LoadModel("/no/such/dir")
	var e *Error
	if !errors.As(err, &e) || e.Status != StatusIO || !strings.Contains(e.Message, "/no/such/dir") ||
		!errors.Is(err, ErrIO) || errors.Is(err, ErrInvalidArgument) {
		t.Errorf("missing model dir: %#v", err)
	}
	if _, err := LoadModel(tinyEn, WithDevice("tpu")); !errors.Is(err, ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "tpu") {
		t.Errorf("unknown device: %v", err)
	}
	// (No load over a memory limit here: the engine keeps a device's limit for the process, so
	// it would fail every later load of this test binary.)
	if _, err := LoadModel(filepath.Join(repo, "tests")); err == nil {
		t.Error("not a model directory: no error")
	}

	m := shared(t)
	ctx := context.Background()
	s := m.Stream(ctx, Prompt{Text: "Hello"}, WithTemperature(-1))
	if toks, err := collectStream(s); !errors.Is(err, ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "temperature") || len(toks) != 0 {
		t.Errorf("negative temperature: %v", err)
	}
	if s.Result().FinishReason != "error" {
		t.Errorf("result %+v", s.Result())
	}
	for name, opt := range map[string]Option{ // what the message names
		"top_p": WithTopP(3), "max_tokens": WithMaxTokens(0), "min_p": WithMinP(-1),
		"repetition_penalty": WithRepeatPenalty(0), "stop token id 99999": WithStopTokens(99999),
		"presence_penalty": WithPresencePenalty(5),
	} {
		for tok := range chanOf(m.Generate(ctx, "Hello", opt)) {
			t.Errorf("%s: token %v", name, tok)
		}
		if err := m.Err(); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := collectStream(m.Stream(ctx, Prompt{IDs: []int32{2, 1 << 30}})); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("id out of the vocabulary: %v", err)
	}
	if _, err := collectStream(m.Stream(ctx, Prompt{IDs: []int32{}})); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("no ids: %v", err)
	}
	long := strings.Repeat("and ", 400)
	if _, err := collectStream(m.Stream(ctx, Prompt{Text: long})); !errors.Is(err, ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "context") {
		t.Errorf("longer than the context: %v", err)
	}
	if _, err := collectStream(m.ChatStream(ctx, []Message{{"user", "a"}, {"user", "b"}})); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("roles the template rejects: %v", err)
	}

	// Batches and classifications: options fail the call, prompts their own result.
	if _, err := m.BatchGenerate(ctx, []string{"a"}, WithTemperature(-1)); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("batch, negative temperature: %v", err)
	}
	rs, err := m.BatchGeneratePrompts(ctx, []Prompt{{Text: "Hello"}, {IDs: []int32{-1}}, {Text: long}},
		WithMaxTokens(3))
	if err != nil || rs[0].Err != nil || !errors.Is(rs[1].Err, ErrInvalidArgument) ||
		!errors.Is(rs[2].Err, ErrInvalidArgument) || rs[1].FinishReason != "error" {
		t.Errorf("batch with bad prompts: %v %+v", err, rs)
	}
	if _, err := m.Classify(ctx, []string{"a"}, WithTopLogprobs(50)); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("classify, top logprobs 50: %v", err)
	}
	cs, err := m.ClassifyPrompts(ctx, []Prompt{{IDs: []int32{5000}}, {Text: "Hello"}})
	if err != nil || !errors.Is(cs[0].Err, ErrInvalidArgument) || cs[0].Token.ID != -1 || cs[1].Err != nil {
		t.Errorf("classify with a bad prompt: %v %+v", err, cs)
	}
	if rs, err := m.BatchGenerate(ctx, nil); err != nil || len(rs) != 0 {
		t.Errorf("empty batch: %v %v", rs, err)
	}
	if cs, err := m.Classify(ctx, nil); err != nil || len(cs) != 0 {
		t.Errorf("empty classify: %v %v", cs, err)
	}
	settles(t, m)
}

func TestErrorValues(t *testing.T) {
	e := &Error{Status: StatusOutOfMemory, Message: "the KV pool is full"}
	if e.Error() != "tessera: the KV pool is full" || !errors.Is(e, ErrOutOfMemory) ||
		errors.Is(e, ErrCancelled) || StatusOutOfMemory.String() != "out_of_memory" ||
		ErrIO.Error() != "tessera: io" {
		t.Errorf("%v %v", e, ErrIO)
	}
}
