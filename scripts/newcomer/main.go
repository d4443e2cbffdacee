// Command newcomer runs every command that README.md and docs/*.md show, as a newcomer
// would type them, on a fresh clone: it clones the repository into a temporary folder,
// builds privtrain (with train, evaluate, predict, export, privacy, audit and erm as
// commands of their own, as `go install ./cmd/...` gives), writes the small files the
// docs assume (patients.csv, visits.csv, photos/, phishing.txt) and runs the commands of
// each doc's fenced code blocks in order, in the clone cleaned before each doc, so that a
// block's `train -checkpoint m.ckpt` feeds its `evaluate -checkpoint m.ckpt` and one
// page's files do not meet the next's. The budget store, the prior cache and every other
// per-user file go to the temporary HOME.
//
//	go run ./scripts/newcomer            # every command as written (a long run: the recipes train for minutes)
//	go run ./scripts/newcomer -short     # short settings where the docs say so, slow blocks skipped
//	go run ./scripts/newcomer -list      # the commands it finds, and what it would do with each
//
// A command is a line of a fenced block that starts with `go run ./cmd/`, `privtrain ` or
// the name of a command (`train `…); `# …` comments are dropped and a trailing `\`
// continues a line. HTML comments on the lines before a block (invisible on the rendered
// page) say how to run its commands, each for all of them or, with /REGEXP/, for those
// that match:
//
//	<!-- newcomer: skip [/RE/] REASON -->         never run (a synopsis, data not available here)
//	<!-- newcomer: short [/RE/] ARGS -->          with -short, append ARGS to each training command
//	<!-- newcomer: short-skip [/RE/] REASON -->   with -short, skip (it takes minutes)
//	<!-- newcomer: needs [/RE/] PATH -->          skip, saying so, when PATH does not exist
//
// The commands run from the clone's committed files, the docs as read from -repo: run it
// on a clean checkout (or commit first).
// Exit status: 0 when every command that ran passed, 1 otherwise, 2 for bad flags.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("newcomer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	short := fs.Bool("short", false, "short settings: each block's `short` arguments, `short-skip` blocks skipped")
	list := fs.Bool("list", false, "list the commands and what would be done with each; run nothing")
	repo := fs.String("repo", ".", "the repository to clone (its committed HEAD: a fresh clone)")
	only := fs.String("run", "", "run only the blocks of files whose path matches this regular expression")
	timeout := fs.Duration("timeout", 30*time.Minute, "the most one command may take")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var filter *regexp.Regexp
	if *only != "" {
		var err error
		if filter, err = regexp.Compile(*only); err != nil {
			fmt.Fprintf(stderr, "newcomer: -run %q: %v\n", *only, err)
			return 2
		}
	}
	blocks, err := Blocks(*repo)
	if err != nil {
		fmt.Fprintf(stderr, "newcomer: %v\n", err)
		return 1
	}
	if filter != nil {
		kept := blocks[:0]
		for _, b := range blocks {
			if filter.MatchString(b.File) {
				kept = append(kept, b)
			}
		}
		blocks = kept
	}
	if *list {
		for _, b := range blocks {
			for _, c := range b.Commands {
				fmt.Fprintf(stdout, "%s:%d\t%s\t%s\n", b.File, b.Line, b.Plan(c, *short), c)
			}
		}
		return 0
	}
	r, err := NewRunner(*repo, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "newcomer: %v\n", err)
		return 1
	}
	defer r.Close()
	r.Timeout = *timeout
	failed, ran, skipped := 0, 0, 0
	for _, b := range blocks {
		res := r.RunBlock(b, *short)
		for _, c := range res {
			switch {
			case c.Skipped != "":
				skipped++
				fmt.Fprintf(stdout, "skip  %s:%d  %s  (%s)\n", b.File, b.Line, c.Command, c.Skipped)
			case c.Err != nil:
				failed++
				fmt.Fprintf(stdout, "FAIL  %s:%d  %s  (%.1f s): %v\n%s\n", b.File, b.Line, c.Command, c.Seconds, c.Err, indent(c.Output))
			default:
				ran++
				fmt.Fprintf(stdout, "ok    %s:%d  %s  (%.1f s)\n", b.File, b.Line, c.Command, c.Seconds)
			}
		}
	}
	fmt.Fprintf(stdout, "newcomer: %d commands passed, %d failed, %d skipped\n", ran, failed, skipped)
	if failed > 0 {
		return 1
	}
	return 0
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > 30 {
		lines = append(lines[:10], append([]string{"      …"}, lines[len(lines)-19:]...)...)
	}
	for i, l := range lines {
		lines[i] = "      " + l
	}
	return strings.Join(lines, "\n")
}

// Block is a fenced code block of a doc with its commands and the directives above it.
type Block struct {
	File     string // relative to the repository
	Line     int    // of the opening fence
	Commands []string
	Rules    []Rule
}

// Rule is one directive: Kind skip, short-skip, short or needs, with its argument, for
// the block's commands that Match (all when nil).
type Rule struct {
	Kind, Arg string
	Match     *regexp.Regexp
}

// Decide says what a run does with command c of b: skip it (reason not empty), or run
// it with extra arguments appended.
func (b Block) Decide(c string, short bool) (reason, extra string) {
	for _, r := range b.Rules {
		if r.Match != nil && !r.Match.MatchString(c) {
			continue
		}
		switch r.Kind {
		case "skip":
			return r.Arg, ""
		case "short-skip":
			if short {
				return "with -short: " + r.Arg, ""
			}
		case "needs":
			if _, err := os.Stat(os.ExpandEnv(r.Arg)); err != nil {
				return "needs " + r.Arg, ""
			}
		case "short":
			if short && trainingCommand.MatchString(c) {
				extra = strings.TrimSpace(extra + " " + r.Arg)
			}
		}
	}
	return "", extra
}

// Plan says in words what a run does with command c of b.
func (b Block) Plan(c string, short bool) string {
	reason, extra := b.Decide(c, short)
	switch {
	case reason != "":
		return "skip: " + reason
	case extra != "":
		return "run, with " + extra
	}
	return "run"
}

// commandNames are the words a command line may start with: the binary and each command
// of it, which a newcomer who ran `go install ./cmd/...` has.
var commandNames = []string{"privtrain", "train", "evaluate", "predict", "export", "privacy", "audit", "erm"}

var directive = regexp.MustCompile(`^<!--\s*newcomer:\s*(skip|short-skip|short|needs)\s*(/[^/]*/)?\s*(.*?)\s*-->$`)

// Blocks reads README.md and docs/*.md under repo and returns their blocks that hold
// commands, in file order (README first).
func Blocks(repo string) ([]Block, error) {
	docs, err := filepath.Glob(filepath.Join(repo, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	var out []Block
	for _, path := range append([]string{filepath.Join(repo, "README.md")}, docs...) {
		rel, _ := filepath.Rel(repo, path)
		bs, err := fileBlocks(path, rel)
		if err != nil {
			return nil, err
		}
		out = append(out, bs...)
	}
	return out, nil
}

func fileBlocks(path, rel string) ([]Block, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		out              []Block
		cur              *Block
		pending          []Rule // directives seen above the next fence
		cont             string // a command continued by a trailing backslash
		inBlock, fenced4 bool
	)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if !inBlock {
			if m := directive.FindStringSubmatch(trimmed); m != nil {
				r := Rule{Kind: m[1], Arg: m[3]}
				if m[2] != "" {
					re, err := regexp.Compile(strings.Trim(m[2], "/"))
					if err != nil {
						return nil, fmt.Errorf("%s:%d: newcomer directive: %v", rel, n, err)
					}
					r.Match = re
				}
				pending = append(pending, r)
				continue
			}
			if strings.HasPrefix(trimmed, "```") {
				inBlock, fenced4 = true, strings.HasPrefix(trimmed, "````")
				cur = &Block{File: rel, Line: n, Rules: pending}
				pending = nil
				continue
			}
			if trimmed != "" {
				pending = nil // a directive belongs to the block right below it
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") && (!fenced4 || strings.HasPrefix(trimmed, "````")) {
			inBlock = false
			if len(cur.Commands) > 0 {
				out = append(out, *cur)
			}
			continue
		}
		if cont != "" {
			trimmed = cont + " " + trimmed
			cont = ""
		} else if !isCommand(trimmed) {
			continue
		}
		if strings.HasSuffix(trimmed, `\`) {
			cont = strings.TrimSpace(strings.TrimSuffix(trimmed, `\`))
			continue
		}
		cur.Commands = append(cur.Commands, stripComment(trimmed))
	}
	return out, sc.Err()
}

// subcommands are the words after a command name that make a line a command rather than
// a line of its output ("privacy   (ε = 3, …)").
var subcommands = []string{"epsilon", "noise", "budget", "reproduce", "help"}

func isCommand(line string) bool {
	if strings.HasPrefix(line, "go run ./cmd/") {
		return true
	}
	f := strings.Fields(line)
	if len(f) == 0 || !slices.Contains(commandNames, f[0]) {
		return false
	}
	if len(f) == 1 {
		return true
	}
	if f[0] == "privtrain" {
		return slices.Contains(commandNames, f[1]) || f[1] == "help"
	}
	return strings.HasPrefix(f[1], "-") || slices.Contains(subcommands, f[1])
}

// stripComment drops a trailing "# …" that is not inside quotes.
func stripComment(line string) string {
	if i := unquoted(line, func(i int, r rune) bool { return r == '#' && (i == 0 || line[i-1] == ' ') }); i >= 0 {
		line = line[:i]
	}
	return strings.TrimSpace(line)
}

// unquoted is the index of the first rune of line outside '…' and "…" for which at says
// true, or −1.
func unquoted(line string, at func(i int, r rune) bool) int {
	quote := rune(0)
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case at(i, r):
			return i
		}
	}
	return -1
}

// Runner runs blocks in a fresh clone with the commands built once.
type Runner struct {
	Clone, Bin, Home string
	Timeout          time.Duration
	tmp              string
	goEnv            []string // the user's Go caches: a fresh HOME must not rebuild the world
	file             string   // the doc whose blocks ran last
}

// NewRunner clones repo's HEAD into a temporary folder, builds privtrain there and writes
// the files the docs assume.
func NewRunner(repo string, log io.Writer) (*Runner, error) {
	tmp, err := os.MkdirTemp("", "newcomer-")
	if err != nil {
		return nil, err
	}
	r := &Runner{Clone: filepath.Join(tmp, "privtrain"), Bin: filepath.Join(tmp, "bin"), Home: filepath.Join(tmp, "home"), tmp: tmp, Timeout: 30 * time.Minute}
	fail := func(err error) (*Runner, error) {
		os.RemoveAll(tmp)
		return nil, err
	}
	for _, d := range []string{r.Bin, r.Home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fail(err)
		}
	}
	fmt.Fprintf(log, "newcomer: cloning %s into %s and building privtrain\n", repo, r.Clone)
	if out, err := exec.Command("git", "clone", "--quiet", repo, r.Clone).CombinedOutput(); err != nil {
		return fail(fmt.Errorf("git clone: %v: %s", err, out))
	}
	build := exec.Command("go", "build", "-o", filepath.Join(r.Bin, "privtrain"), "./cmd/privtrain")
	build.Dir = r.Clone
	if out, err := build.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("go build ./cmd/privtrain: %v: %s", err, out))
	}
	for _, v := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		out, err := exec.Command("go", "env", v).Output()
		if err != nil {
			return fail(fmt.Errorf("go env %s: %v", v, err))
		}
		r.goEnv = append(r.goEnv, v+"="+strings.TrimSpace(string(out)))
	}
	for _, c := range commandNames[1:] {
		script := fmt.Sprintf("#!/bin/sh\nexec %q %s \"$@\"\n", filepath.Join(r.Bin, "privtrain"), c)
		if err := os.WriteFile(filepath.Join(r.Bin, c), []byte(script), 0o755); err != nil {
			return fail(err)
		}
	}
	if err := writeFixtures(r.Clone); err != nil {
		return fail(err)
	}
	return r, nil
}

// Close removes the clone and everything the commands wrote.
func (r *Runner) Close() error { return os.RemoveAll(r.tmp) }

// Result is what became of one command.
type Result struct {
	Command, Skipped, Output string
	Err                      error
	Seconds                  float64
}

// trainingCommand matches the commands that train, which a block's short arguments go to.
var trainingCommand = regexp.MustCompile(`^(go run \./cmd/train|privtrain train|train)( |$)`)

// RunBlock runs b's commands in order in the clone, each under sh. Each doc starts from
// a clean clone (git clean, the docs' files written again): a reader who follows one page
// has not run another's commands.
func (r *Runner) RunBlock(b Block, short bool) []Result {
	out := make([]Result, len(b.Commands))
	if b.File != r.file {
		clean := exec.Command("git", "clean", "-fdxq")
		clean.Dir = r.Clone
		if o, err := clean.CombinedOutput(); err != nil {
			for i := range out {
				out[i] = Result{Command: b.Commands[i], Err: fmt.Errorf("git clean: %v: %s", err, o)}
			}
			return out
		}
		if err := writeFixtures(r.Clone); err != nil {
			for i := range out {
				out[i] = Result{Command: b.Commands[i], Err: err}
			}
			return out
		}
		r.file = b.File
	}
	for i, c := range b.Commands {
		out[i].Command = c
		reason, extra := b.Decide(c, short)
		if reason != "" {
			out[i].Skipped = reason
			continue
		}
		cmdline := c
		if extra != "" {
			cmdline = appendArgs(c, extra)
		}
		ctx, cancel := context.WithTimeout(context.Background(), r.Timeout)
		cmd := exec.CommandContext(ctx, "sh", "-c", cmdline)
		cmd.Dir = r.Clone
		cmd.Env = append(os.Environ(), "HOME="+r.Home, "XDG_CACHE_HOME="+filepath.Join(r.Home, ".cache"),
			"XDG_DATA_HOME="+filepath.Join(r.Home, ".local", "share"), "PATH="+r.Bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		cmd.Env = append(cmd.Env, r.goEnv...)
		start := time.Now()
		output, err := cmd.CombinedOutput()
		cancel()
		out[i].Seconds, out[i].Output, out[i].Err = time.Since(start).Seconds(), string(output), err
		if err != nil {
			for j := i + 1; j < len(out); j++ { // the rest of the block depends on it
				out[j].Command, out[j].Skipped = b.Commands[j], "an earlier command of the block failed"
			}
			return out
		}
	}
	return out
}

// appendArgs adds args to the command line c before its first unquoted redirection or
// pipe, so that `train -print-model > res.json` gets them on train's side.
func appendArgs(c, args string) string {
	if i := unquoted(c, func(_ int, r rune) bool { return r == '>' || r == '|' || r == '<' }); i >= 0 {
		return strings.TrimSpace(c[:i]) + " " + args + " " + c[i:]
	}
	return c + " " + args
}
