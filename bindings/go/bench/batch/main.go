// Command batch measures what the Go binding costs: generated tokens/s of BatchGenerate of N
// prompts through Go against the same work through the C++ API (`tessera batch`, which calls
// Engine::batch_generate), same model, engine options and greedy fixed-length decoding, the two
// alternated run by run so that a busy machine weighs on both alike. Each side's figure is
// the engine's own over the batch (BatchMetrics), load time excluded; the medians are compared.
//
//	go run ./bench/batch -model ../../models/tessera-tiny-en -cli ../../build/tessera
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"

	"tessera"
)

func main() {
	model := flag.String("model", "../../models/tessera-tiny-en", "model directory")
	cli := flag.String("cli", "../../build/tessera", "the tessera CLI")
	device := flag.String("device", "cpu", "auto, cpu or cuda")
	n := flag.Int("prompts", 64, "prompts per batch")
	tokens := flag.Int("max-tokens", 64, "tokens generated per prompt")
	runs := flag.Int("runs", 5, "batches per side")
	flag.Parse()
	if err := run(*model, *cli, *device, *n, *tokens, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "batch:", err)
		os.Exit(1)
	}
}

var rate = regexp.MustCompile(`([0-9.]+) generated tokens/s`)

func run(model, cli, device string, n, tokens, runs int) error {
	words := []string{"And it came to pass", "The king said unto", "In the beginning",
		"Blessed are the", "HONEST, adj.", "A fool and his", "The hacker", "Thou shalt not"}
	prompts := make([]string, n)
	for i := range prompts {
		prompts[i] = fmt.Sprintf("%s %d", words[i%len(words)], i)
	}
	dir, err := os.MkdirTemp("", "tessera-batch-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	input := filepath.Join(dir, "prompts.jsonl")
	f, err := os.Create(input)
	if err != nil {
		return err
	}
	for _, p := range prompts {
		j, _ := json.Marshal(map[string]string{"prompt": p})
		fmt.Fprintf(f, "%s\n", j)
	}
	f.Close()

	seqs := strconv.Itoa(n)
	m, err := tessera.LoadModel(model, tessera.WithDevice(device), tessera.WithMaxSeqs(n),
		tessera.WithContextLen(256))
	if err != nil {
		return err
	}
	defer m.Close()
	opts := []tessera.Option{tessera.WithTemperature(0), tessera.WithMaxTokens(tokens),
		tessera.WithIgnoreEOS()}
	if _, err := m.BatchGenerate(context.Background(), prompts, opts...); err != nil { // warm-up
		return err
	}
	var goRates, cppRates []float64
	for r := 0; r < runs; r++ {
		if _, err := m.BatchGenerate(context.Background(), prompts, opts...); err != nil {
			return err
		}
		mt := m.Metrics()
		goRates = append(goRates, mt.DecodeTokensPerSec)
		out, err := exec.Command(cli, "batch", "--model", model, "--device", device, "--input",
			input, "--max-seqs", seqs, "--context", "256", "--temperature", "0", "--max-tokens",
			strconv.Itoa(tokens), "--ignore-eos").CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s batch: %v\n%s", cli, err, out)
		}
		got := rate.FindSubmatch(out)
		if got == nil {
			return fmt.Errorf("no rate in the CLI's output:\n%s", out)
		}
		v, _ := strconv.ParseFloat(string(got[1]), 64)
		cppRates = append(cppRates, v)
		fmt.Printf("run %d: Go %.1f, C++ %.1f generated tokens/s (%d tokens)\n", r+1,
			goRates[r], v, mt.GeneratedTokens)
	}
	g, c := median(goRates), median(cppRates)
	fmt.Printf("%d prompts x %d tokens on %s: Go BatchGenerate %.1f, C++ batch_generate %.1f "+
		"generated tokens/s (medians of %d): the binding costs %+.2f%%\n", n, tokens,
		m.Info().Device, g, c, runs, 100*(c-g)/c)
	return nil
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
