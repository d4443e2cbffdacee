package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/internal/safeio"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// KeyEnv names the environment variable that holds the checkpoint key: when it is set,
// cmd/train writes checkpoints with an HMAC-SHA256 under it (checkpoint.SaveWithKey),
// and every command that reads a checkpoint loads only one whose MAC verifies under it.
const KeyEnv = "PRIVTRAIN_CHECKPOINT_KEY"

// AllowUnsignedUsage is the help text of -allow-unsigned, the same in every command.
const AllowUnsignedUsage = "load a checkpoint whose MAC cannot be checked: one that is signed (written with " + KeyEnv +
	" set) while " + KeyEnv + " is not set, or one without a MAC while it is set; a warning says so. Without this flag such a checkpoint is refused (exit 2). A MAC that does not verify under the key is always refused"

// CheckpointKey returns the key of KeyEnv, nil when the variable is not set; a key too
// short to be a key is a usage error.
func CheckpointKey() ([]byte, error) {
	k, ok := os.LookupEnv(KeyEnv)
	if !ok {
		return nil, nil
	}
	if len(k) < checkpoint.MinKeyLen {
		return nil, exit.Usagef("%s: a key of %d bytes; use at least %d (random) bytes", KeyEnv, len(k), checkpoint.MinKeyLen)
	}
	return []byte(k), nil
}

// SaveCheckpoint writes c to path (atomically, checkpoint.Save), with an HMAC-SHA256
// under the key of KeyEnv when it is set (checkpoint.SaveWithKey): the key is read as
// Signing.Load reads it, so that what cmd/train writes the other commands load. A key too
// short to be a key is a usage error.
func SaveCheckpoint(path string, c *checkpoint.Training) error {
	key, err := CheckpointKey()
	if err != nil {
		return err
	}
	if key != nil {
		return checkpoint.SaveWithKey(path, c, key)
	}
	return checkpoint.Save(path, c)
}

// Signing is how a command treats checkpoint MACs: the key of KeyEnv (read when a
// checkpoint is loaded) and -allow-unsigned. Its warnings go to Stderr, prefixed with
// Command.
type Signing struct {
	Command       string // "evaluate": the prefix of warnings
	AllowUnsigned bool   // -allow-unsigned
	Stderr        io.Writer
}

// stderr is where notes on loading go: s.Stderr, or nowhere.
func (s *Signing) stderr() io.Writer {
	if s == nil || s.Stderr == nil {
		return io.Discard
	}
	return s.Stderr
}

// SigningFlag registers -allow-unsigned on fs and returns the Signing that
// LoadCheckpoint and PredictorParams take.
func SigningFlag(fs *flag.FlagSet, command string, stderr io.Writer) *Signing {
	s := &Signing{Command: command, Stderr: stderr}
	fs.BoolVar(&s.AllowUnsigned, "allow-unsigned", false, AllowUnsignedUsage)
	return s
}

// Auth says what a loaded checkpoint's MAC proved.
type Auth struct {
	Signed   bool // the file carries a MAC
	Verified bool // the MAC verified under KeyEnv's key
}

// authError is a usage error (exit 2) that also matches checkpoint.ErrAuthentication.
type authError struct{ usage error }

func (e *authError) Error() string   { return e.usage.Error() }
func (e *authError) Unwrap() []error { return []error{e.usage, checkpoint.ErrAuthentication} }

// Load reads the checkpoint at path, given by -flagName, under the rules every command
// shares:
//   - KeyEnv set: the MAC must verify under the key; a MAC that does not verify is
//     refused; a file without a MAC is refused unless -allow-unsigned, which loads it
//     with a warning.
//   - KeyEnv not set: a file with a MAC (signed) is refused, since its MAC cannot be
//     checked, unless -allow-unsigned, which loads it unchecked with a warning; a file
//     without one loads as before.
//
// Refusals are usage errors (exit 2) matching checkpoint.ErrAuthentication; a missing
// file is a usage error, a damaged one a failure.
func (s *Signing) Load(flagName, path string) (*checkpoint.Training, Auth, error) {
	if s == nil {
		s = &Signing{}
	}
	key, err := CheckpointKey()
	if err != nil {
		return nil, Auth{}, err
	}
	if key != nil {
		c, err := checkpoint.LoadWithKey(path, key)
		switch {
		case err == nil:
			return c, Auth{Signed: true, Verified: true}, nil
		case errors.Is(err, checkpoint.ErrNoMAC) && s.AllowUnsigned:
			c, _, err := checkpoint.LoadUnverified(path)
			if err != nil {
				return nil, Auth{}, loadError(flagName, path, err)
			}
			s.warn("-%s %s carries no MAC although %s is set: loaded without checking (-allow-unsigned)", flagName, path, KeyEnv)
			return c, Auth{}, nil
		case errors.Is(err, checkpoint.ErrNoMAC):
			return nil, Auth{}, &authError{exit.Usagef("-%s %s carries no MAC, but %s is set: it was written without a key (or its MAC was removed); unset %s to load it, or add -allow-unsigned",
				flagName, path, KeyEnv, KeyEnv)}
		case errors.Is(err, checkpoint.ErrAuthentication):
			return nil, Auth{}, &authError{exit.Usagef("-%s %s: its MAC does not verify under %s: it was written with another key, or changed since; refusing it",
				flagName, path, KeyEnv)}
		}
		return nil, Auth{}, loadError(flagName, path, err)
	}
	c, signed, err := checkpoint.LoadUnverified(path)
	if err != nil {
		return nil, Auth{}, loadError(flagName, path, err)
	}
	if signed {
		if !s.AllowUnsigned {
			return nil, Auth{}, &authError{exit.Usagef("-%s %s is signed (it carries a MAC), but %s is not set, so the MAC cannot be checked: set %s to the key it was written with, or add -allow-unsigned to load it without checking",
				flagName, path, KeyEnv, KeyEnv)}
		}
		s.warn("-%s %s is signed, but %s is not set: loaded without checking its MAC (-allow-unsigned)", flagName, path, KeyEnv)
	}
	return c, Auth{Signed: signed}, nil
}

func (s *Signing) warn(format string, a ...any) {
	if s.Stderr == nil {
		return
	}
	prefix := "warning: "
	if s.Command != "" {
		prefix = s.Command + ": " + prefix
	}
	fmt.Fprintf(s.Stderr, prefix+format+"\n", a...)
}

// loadError names the flag and the file of a checkpoint that could not be read: a
// missing file is a usage error, a damaged one a failure.
func loadError(flagName, path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return exit.Usagef("-%s %s: no such file", flagName, path)
	}
	if errors.Is(err, safeio.ErrNotRegular) { // a FIFO, a device, a folder: named by mistake
		return exit.Usagef("-%s %s", flagName, trimPrefixes(err.Error(), ""))
	}
	return FileError(flagName, path, err)
}

// FileError is err, about the file of -flagName path, with a message that names the flag
// and the path once: the prefixes that the libraries' errors add ("nn: ", "training: ",
// "checkpoint: ", "PATH: ") are dropped from its front. errors.Is and errors.As see err.
func FileError(flagName, path string, err error) error {
	return &fileError{fmt.Sprintf("-%s %s: %s", flagName, path, trimPrefixes(err.Error(), path)), err}
}

// fileError is an error about the file of -flag PATH whose message names the flag and
// the path once; errors.Is and errors.As see the cause.
type fileError struct {
	msg string
	err error
}

func (e *fileError) Error() string { return e.msg }
func (e *fileError) Unwrap() error { return e.err }

// trimPrefixes drops from msg's front the prefixes that the libraries' errors add
// ("nn: ", "training: ", "checkpoint: ", "PATH: "), which the flag and path already say.
func trimPrefixes(msg, path string) string {
	for trimmed := true; trimmed; {
		trimmed = false
		for _, p := range []string{"nn: ", "training: ", "checkpoint: ", path + ": "} {
			if rest, ok := strings.CutPrefix(msg, p); ok {
				msg, trimmed = rest, true
			}
		}
	}
	return msg
}

// LoadCheckpoint reads the checkpoint named by -checkpoint under the MAC rules of
// Signing.Load: a missing flag or file is a usage error, a damaged file a failure.
func LoadCheckpoint(path string, s *Signing) (*checkpoint.Training, error) {
	if path == "" {
		return nil, exit.Usagef("-checkpoint FILE is required (a checkpoint written by train -checkpoint)")
	}
	c, _, err := s.Load("checkpoint", path)
	return c, err
}
