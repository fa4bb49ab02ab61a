package main

import (
	"bytes"
	"strings"
	"testing"
)

// The example runs: two turns from stdin (and a blank line, asked again), greedy, with the
// shipped model.
func TestChatExampleRuns(t *testing.T) {
	in := strings.NewReader("What is wisdom?\n\nWhat is a fool?\n/quit\n")
	var out, errOut bytes.Buffer
	err := run([]string{"-model", "../../../../models/tessera-tiny-en", "-device", "cpu",
		"-temperature", "0", "-max-tokens", "12", "-metrics", "-system", "Answer briefly."},
		in, &out, &errOut)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	if strings.Count(out.String(), "> ") != 4 || strings.Count(errOut.String(), "tokens/s]") != 2 {
		t.Errorf("stdout %q\nstderr %q", out.String(), errOut.String())
	}
	if err := run([]string{"-model", "/no/such/dir"}, in, &out, &errOut); err == nil {
		t.Error("missing model: no error")
	}
}
