package privacycmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/exit"
)

// TestUnreachableTarget: ε = 0.05 cannot be certified with orders up to 63 at δ = 1e-5
// (the accountant's floor there is about 0.1): that is bad input, exit 2, one line that
// names the flag to change and no Go call.
func TestUnreachableTarget(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"noise", "-n", "60000", "-batch", "256", "-epochs", "60", "-epsilon", "0.05", "-delta", "1e-5"}, &out, &errb)
	msg := errb.String()
	if code != exit.Usage || strings.Count(msg, "\n") != 1 || out.Len() != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2 and one line", code, out.String(), msg)
	}
	if !strings.Contains(msg, "-max-order 1024") || strings.Contains(msg, "WithOrders") || strings.Contains(msg, "accountant:") {
		t.Errorf("message %q: want the -max-order hint, no Go call, no repeated prefix", msg)
	}
	// With the orders raised it is reachable.
	out.Reset()
	errb.Reset()
	if code := run([]string{"noise", "-n", "60000", "-batch", "256", "-epochs", "60", "-epsilon", "0.05", "-delta", "1e-5", "-max-order", "1024"}, &out, &errb); code != exit.OK {
		t.Errorf("-max-order 1024: exit %d, %s", code, errb.String())
	}
}
