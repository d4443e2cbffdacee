package privacycmd

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/internal/pgtest"
)

// Issue 43: privacy budget -migrate-to URL copies a store directory into a database;
// privacy budget then prints the same JSON for both stores (bar the store's name), the
// runs' listing included; a second migration copies nothing.
func TestBudgetMigrateTo(t *testing.T) {
	srv := pgtest.Require(t)
	dir, url := budgetStore(t), srv.NewDatabase(t)
	code, out, errs := runPrivacy("budget", "-store", dir, "-migrate-to", url)
	if code != exit.OK || strings.Count(out, "copied") != 2 {
		t.Fatalf("-migrate-to: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runPrivacy("budget", "-store", dir, "-migrate-to", url)
	if code != exit.OK || strings.Count(out, "held already") != 2 {
		t.Errorf("-migrate-to again: exit %d\n%s%s", code, out, errs)
	}
	for _, args := range [][]string{{"-json"}, {"-json", "-fingerprint", "aaaa"}} {
		var fromDir, fromDB map[string]any
		for _, c := range []struct {
			store string
			into  *map[string]any
		}{{dir, &fromDir}, {url, &fromDB}} {
			code, out, errs := runPrivacy(append([]string{"budget", "-store", c.store}, args...)...)
			if code != exit.OK {
				t.Fatalf("%v on %s: exit %d %s", args, c.store, code, errs)
			}
			if err := json.Unmarshal([]byte(out), c.into); err != nil {
				t.Fatal(err)
			}
		}
		if fromDB["store"] != url || fromDir["store"] != dir {
			t.Errorf("%v: stores %v and %v", args, fromDir["store"], fromDB["store"])
		}
		delete(fromDir, "store")
		delete(fromDB, "store")
		a, _ := json.Marshal(fromDir)
		b, _ := json.Marshal(fromDB)
		if string(a) != string(b) {
			t.Errorf("%v: the directory lists\n%s\nthe database\n%s", args, a, b)
		}
	}
	if code, _, errs := runPrivacy("budget", "-store", dir, "-migrate-to", "/some/dir"); code != exit.Usage || !strings.Contains(errs, "PostgreSQL URL") {
		t.Errorf("-migrate-to a directory: exit %d %s", code, errs)
	}
	if code, _, errs := runPrivacy("budget", "-store", "postgres://alice:s3cret-pw@127.0.0.1:1/l"); code != exit.Usage || strings.Contains(errs, "s3cret-pw") || !strings.Contains(errs, "127.0.0.1:1") {
		t.Errorf("an unreachable database: exit %d %s", code, errs)
	}
}
