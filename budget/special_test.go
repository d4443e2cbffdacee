package budget

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/privtrain/privtrain/internal/safeio"
)

// TestStoreRefusesFIFOs (issue 40, item 3): a FIFO as a data set's ledger or head is
// refused at once by listing (privacy budget) and by Reserve (train), with an error
// naming it, instead of blocking while they hold the store's lock, which blocked every
// other command on the store too.
func TestStoreRefusesFIFOs(t *testing.T) {
	for _, which := range []string{"ledger", "head"} {
		s := openStore(t, nil)
		fill(t, s)
		path := s.ledgerPath(testFP)
		if which == "head" {
			path = s.headPath(testFP)
		}
		os.Remove(path)
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Skip("no FIFOs here:", err)
		}
		for name, call := range map[string]func() error{
			"Datasets": func() error { _, err := s.Datasets(0); return err },
			"Reserve":  func() error { _, err := s.Reserve(testFP, testRun("b"), gauss(fillZ, 1), 0); return err },
		} {
			done := make(chan error, 1)
			go func() { done <- call() }()
			select {
			case err := <-done:
				if !errors.Is(err, safeio.ErrNotRegular) {
					t.Errorf("%s with a FIFO as the %s: %v, want ErrNotRegular", name, which, err)
				}
			case <-time.After(time.Minute):
				t.Fatalf("%s blocks on a FIFO as the %s", name, which)
			}
		}
		if st, err := os.Lstat(path); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
			t.Errorf("the FIFO at the %s was replaced", which)
		}
	}
}

// A symbolic link at a data set's ledger (to a file outside the store, with a torn last
// line, which an append would cut) is refused, and its target is left as it was: no open,
// repair or append of the store's files follows a link.
func TestStoreFollowsNoLinks(t *testing.T) {
	s := openStore(t, nil)
	fill(t, s)
	path := s.ledgerPath(testFP)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "victim")
	torn := append(data, []byte("sha256:0123 {\"torn")...)
	if err := os.WriteFile(outside, torn, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	if err := os.Symlink(outside, path); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	if _, err := s.Reserve(testFP, testRun("b"), gauss(fillZ, 1), 0); !errors.Is(err, safeio.ErrNotRegular) {
		t.Errorf("Reserve with a link as the ledger: %v, want ErrNotRegular", err)
	}
	if got, err := os.ReadFile(outside); err != nil || string(got) != string(torn) {
		t.Errorf("the link's target changed (%v)", err)
	}
}
