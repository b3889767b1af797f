package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
)

// filePerm is the mode of a database file rota creates: jobs' args and results often hold
// secrets (tokens, addresses, customer data), so only the owner may read them. SQLite gives the
// -wal and -shm files it creates beside the database the database file's own mode.
const filePerm = 0o600

// createPrivate creates the database file with filePerm if it does not exist yet, so that SQLite
// opens it instead of creating it with the process's umask (usually readable by every local
// user). An existing file keeps its mode, which is its owner's choice; a warning says when other
// users can read it.
func createPrivate(path string, log *slog.Logger) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, filePerm)
	if err == nil {
		return f.Close()
	}
	if errors.Is(err, fs.ErrExist) {
		// O_EXCL refuses a symbolic link even when the file it names does not exist yet, which
		// SQLite would then create with the umask's mode: create that file, through the link.
		if _, serr := os.Stat(path); errors.Is(serr, fs.ErrNotExist) {
			if f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, filePerm); err == nil {
				return f.Close()
			}
		}
	}
	if !errors.Is(err, fs.ErrExist) {
		if errors.Is(err, fs.ErrPermission) {
			return nil // SQLite says what it can or cannot do with the file
		}
		return fmt.Errorf("create: %w", err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		log.Warn("sqlite: the database file can be read by other users; its jobs' args and results may hold secrets (chmod 600 it)",
			"path", path, "mode", fi.Mode().Perm().String())
	}
	return nil
}
