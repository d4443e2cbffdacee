// Package budget keeps the privacy budget of each data set across runs, processes and
// checkpoints: an append-only, hash-chained ledger per data set, keyed by the data's
// content fingerprint (datasets.ContentFingerprint), in a store directory.
//
// A run reserves its planned spend before its first step (Store.Reserve, which refuses a
// plan that would take the data set past a budget) and settles it when it stops
// (Reservation.Commit); a run killed in between stays counted at its reservation, so a
// crash never under-counts. A data set's spend is the composition of the spends of all
// its runs (Compose): Rényi DP curves add across runs, and when every run is a list of
// subsampled Gaussian segments the privacy loss distribution composes them too; the
// smaller of the two upper bounds is reported, with the method that gave it.
//
// The store is safe across processes (a file lock around every read and append),
// crash-safe (one whole line per append with O_APPEND and fsync; a torn last line is
// ignored and repaired on the next append) and tamper-evident: each entry carries the
// hash of the previous one (an HMAC-SHA256 once the ledger is sealed with the store's
// key, Store.Seal), and a head file records the last entry, so that an edited, removed
// (also the last one) or reordered entry fails verification with an error that names the
// data set and the entry. A reservation refuses a witness (a ledger Head recorded by a
// resumed checkpoint) that the ledger no longer holds: a rollback. Without the key anyone
// who can write the store can rewrite an unsealed ledger consistently; with it a sealed
// one; a rollback of both files that no witness reveals goes unseen. See docs/budget.md.
package budget
