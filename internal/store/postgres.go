package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/cenkalti/backoff/v5"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

// PostgresConfig says which PostgreSQL database holds the store.
type PostgresConfig struct {
	// URL is postgres://user@host:port/db?sslmode=…; a password in it is
	// accepted but PasswordFile is the way to give one.
	URL string
	// PasswordFile holds the password (a trailing newline is not part of
	// it); "" for none (trust, certificates, or a .pgpass file).
	PasswordFile string
	// KeyDir is where the keystore key file is looked for when neither
	// Options.KeystoreKey nor $HANGAR_KEYSTORE_KEY gives the key: the
	// data directory. Replicas sharing the database need the same key.
	KeyDir string
}

// Postgres is the Store on a PostgreSQL database that several gateway
// replicas may share (github.com/jackc/pgx/v5: a pgxpool behind
// database/sql, so the queries are the SQLite driver's). A write returns
// nil only once PostgreSQL committed it. While the server cannot be
// reached, calls fail at once with an ErrUnavailable error and one
// goroutine reconnects with backoff.
type Postgres struct {
	*sqlStore
	pool *pgxpool.Pool
	// listenCfg connects the change feed's own connection (Watch).
	listenCfg *pgx.ConnConfig
}

var (
	_ Store        = (*Postgres)(nil)
	_ AuditBatcher = (*Postgres)(nil)
	_ Importer     = (*Postgres)(nil)
	_ Members      = (*Postgres)(nil)
)

// migrationLock is the advisory lock that makes replicas starting at the
// same time migrate one after the other ("hangar" in ASCII).
const migrationLock = 0x68616e676172

// OpenPostgres connects to the database, retrying with backoff for up to a
// minute (a database started beside the gateway may not accept connections
// yet), and brings its schema up to date. An error names the database by
// its URL without secrets, and never holds the password.
func OpenPostgres(cfg PostgresConfig, opts Options) (*Postgres, error) {
	core, err := newSQLStore(postgresDialect, opts)
	if err != nil {
		return nil, err
	}
	where, err := RedactURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	core.path, core.dir = where, cfg.KeyDir
	pc, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		// pgx's message quotes the connection string with its password
		// masked; ours names it the same way ours are named everywhere.
		return nil, fmt.Errorf("store: %s: %v", where, redactParseError(err, cfg.URL, where))
	}
	if cfg.PasswordFile != "" {
		pw, err := readPassword(cfg.PasswordFile)
		if err != nil {
			return nil, err
		}
		pc.ConnConfig.Password = pw
	}
	if pc.ConnConfig.ConnectTimeout == 0 {
		pc.ConnConfig.ConnectTimeout = probeTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", where, err)
	}
	s := &Postgres{sqlStore: core, pool: pool, listenCfg: pc.ConnConfig.Copy()}
	s.db = stdlib.OpenDBFromPool(pool)
	if err := s.open(ctx); err != nil {
		_ = s.db.Close()
		pool.Close()
		return nil, err
	}
	s.reach = newReachability(where, pool.Ping, pool.Reset, s.log)
	return s, nil
}

func (s *Postgres) open(ctx context.Context) error {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval = reconnectFirst, reconnectMax
	b.Reset()
	_, err := backoff.Retry(ctx, func() (struct{}, error) {
		err := s.pool.Ping(ctx)
		if err != nil && !connectionLost(err) {
			return struct{}{}, backoff.Permanent(err) // wrong password, no such database: no use waiting
		}
		if err != nil {
			s.log.Warn("store not reachable yet; retrying", "path", s.path, "error", err)
		}
		return struct{}{}, err
	}, backoff.WithBackOff(b), backoff.WithMaxElapsedTime(openTimeout))
	if err != nil {
		return &OpenError{Kind: ErrUnavailable, Path: s.path, Err: err, Msg: fmt.Sprintf(
			"store: cannot connect to %s: %v: check store.url and store.password_file (or $%s), and that the "+
				"database server accepts connections from this host", s.path, err, "HANGAR_STORE_URL")}
	}
	if err := s.migrate(ctx); err != nil {
		var oe *OpenError
		if errors.As(err, &oe) {
			return err
		}
		return fmt.Errorf("store: migrate %s: %w", s.path, err)
	}
	if err := s.db.QueryRowContext(ctx, changeChannelQuery).Scan(&s.feed.channel); err != nil {
		return fmt.Errorf("store: %s: change channel: %w", s.path, err)
	}
	s.feed.origin = newOrigin()
	// A replica whose key cannot open the shared keystore refuses to
	// start rather than seal new secrets under another key.
	if _, sealed, err := metaValue(ctx, s.dbRow(ctx), metaKeyCheck); err != nil {
		return fmt.Errorf("store: %s: %w", s.path, err)
	} else if sealed {
		if _, err := s.keystore(ctx); err != nil {
			return err
		}
	}
	return nil
}

// migrate runs the migrations on one connection holding the migration
// lock, so that replicas starting together do not race.
func (s *Postgres) migrate(ctx context.Context) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, int64(migrationLock)); err != nil {
		return err
	}
	defer func() {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrationLock))
	}()
	return migrate(ctx, conn, s.dialect, s.path)
}

// Unreachable is nil while the database answers, else why it does not
// (hangar_health shows it).
func (s *Postgres) Unreachable() error { return s.reach.Unreachable() }

// Close stops reconnecting and closes the connections.
func (s *Postgres) Close() error {
	s.reach.close()
	err := s.db.Close()
	s.pool.Close()
	return err
}

// readPassword reads a password file; its content never appears in an
// error.
func readPassword(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("store: store.password_file: %w", err)
	}
	pw := strings.TrimRight(string(data), "\r\n")
	if pw == "" {
		return "", fmt.Errorf("store: store.password_file %s is empty", path)
	}
	return pw, nil
}

// RedactURL is a PostgreSQL URL as hangar shows it in logs, errors and
// hangar_health: without a password, in the user part or the query.
func RedactURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		// The value itself is not repeated: it may hold the password.
		return "", errors.New(`store: the store URL is not a URL of the form postgres://user@host:5432/db`)
	}
	u.User = redactUser(u.User)
	q := u.Query()
	for k := range q {
		if strings.EqualFold(k, "password") {
			q.Set(k, "xxxxx")
		}
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

func redactUser(u *url.Userinfo) *url.Userinfo {
	if u == nil {
		return nil
	}
	if _, has := u.Password(); has {
		return url.UserPassword(u.Username(), "xxxxx")
	}
	return u
}

// redactParseError is a pgx parse error without the connection string it
// quotes.
func redactParseError(err error, raw, where string) string {
	msg := err.Error()
	return strings.ReplaceAll(msg, raw, where)
}
