package tessera

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The tests run the shipped tessera-tiny-en (10M parameters, real tokenizer and chat template)
// and the transformers fixtures of tests/fixtures/models on the CPU, and compare with the CLI
// (build/tessera, or $TESSERA_BUILD_DIR/tessera).

const repo = "../.."

var tinyEn = filepath.Join(repo, "models", "tessera-tiny-en")

var (
	sharedOnce  sync.Once
	sharedModel *Model
	sharedErr   error
)

// shared is one tessera-tiny-en engine for the tests that do not close or load their own.
func shared(t *testing.T) *Model {
	t.Helper()
	sharedOnce.Do(func() {
		sharedModel, sharedErr = LoadModel(tinyEn, WithDevice("cpu"), WithContextLen(256),
			WithMaxSeqs(16))
	})
	if sharedErr != nil {
		t.Fatalf("loading %s: %v", tinyEn, sharedErr)
	}
	return sharedModel
}

func loadTiny(t *testing.T, opts ...LoadOption) *Model {
	t.Helper()
	m, err := LoadModel(tinyEn, append([]LoadOption{WithDevice("cpu"), WithContextLen(256)}, opts...)...)
	if err != nil {
		t.Fatalf("loading %s: %v", tinyEn, err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func cli(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("TESSERA_BUILD_DIR")
	if dir == "" {
		dir = filepath.Join(repo, "build")
	}
	exe := filepath.Join(dir, "tessera")
	if _, err := os.Stat(exe); err != nil {
		if os.Getenv("TESSERA_BUILD_DIR") != "" {
			t.Fatalf("%s is not built", exe)
		}
		t.Skipf("%s is not built (ninja -C build tessera_cli)", exe)
	}
	return exe
}

// runCLI runs the tessera CLI and returns its stdout.
func runCLI(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(cli(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tessera %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

type cliGenerate struct {
	IDs          []int32 `json:"ids"`
	Text         string  `json:"text"`
	FinishReason string  `json:"finish_reason"`
}

func generateCLI(t *testing.T, args ...string) cliGenerate {
	t.Helper()
	var r cliGenerate
	out := runCLI(t, append([]string{"generate", "--device", "cpu", "--json"}, args...)...)
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("tessera generate --json: %v\n%s", err, out)
	}
	return r
}

// collectStream drains a stream: its tokens, then Err.
func collectStream(s *Stream) ([]Token, error) {
	var toks []Token
	s.Tokens()(func(t Token) bool {
		toks = append(toks, t)
		return true
	})
	return toks, s.Err()
}

func idsOf(toks []Token) []int32 {
	ids := []int32{}
	for _, t := range toks {
		if t.ID >= 0 {
			ids = append(ids, t.ID)
		}
	}
	return ids
}

func textOf(toks []Token) string {
	var b strings.Builder
	for _, t := range toks {
		b.WriteString(t.Text)
	}
	return b.String()
}

// settles waits until the engine runs nothing and holds no KV block (its stats are updated after
// each scheduler step, so they may lag a call's return by one).
func settles(t *testing.T, m *Model) {
	t.Helper()
	var s Stats
	for i := 0; i < 400; i++ {
		var err error
		if s, err = m.Stats(); err != nil {
			t.Fatal(err)
		}
		if s.KVBlocksUsed == 0 && s.Running == 0 && s.Waiting == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("the engine did not settle: %+v", s)
}

// whenGenerated cancels ctx once the engine has generated n more tokens than at the call.
func whenGenerated(t *testing.T, m *Model, n int64, cancel context.CancelFunc) {
	s0, err := m.Stats()
	if err != nil {
		t.Error(err)
		cancel()
		return
	}
	go func() {
		defer cancel()
		for i := 0; i < 10000; i++ {
			s, err := m.Stats()
			if err != nil || s.GeneratedTokens-s0.GeneratedTokens >= n {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
}

func equalIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
