-- The dashboard's schema: apps and machines from heartbeats, per-second and per-minute metrics, rules
-- per app with their history and each machine's push state, users, sessions and API tokens.
-- Every id is AUTOINCREMENT so that a deleted row's id is never handed out again.

CREATE TABLE apps (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    name        TEXT    NOT NULL UNIQUE,
    app_type    INTEGER NOT NULL DEFAULT 0,
    created_at  INTEGER NOT NULL
);

CREATE TABLE machines (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    app_id            INTEGER NOT NULL REFERENCES apps(id),
    ip                TEXT    NOT NULL,
    port              INTEGER NOT NULL,
    hostname          TEXT    NOT NULL,
    sentinel_version  TEXT    NOT NULL,
    -- The token the machine's agent sent with its heartbeat: the dashboard presents it back on calls.
    agent_token       TEXT,
    first_seen        INTEGER NOT NULL,
    last_heartbeat    INTEGER NOT NULL,
    UNIQUE (app_id, ip, port)
);

-- Resources seen in an app's metrics; metric rows refer to them by id to keep rows small.
CREATE TABLE resources (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    app_id  INTEGER NOT NULL REFERENCES apps(id),
    name    TEXT    NOT NULL,
    UNIQUE (app_id, name)
);

-- One row per app x resource x second, summed over the app's machines. rt_sum is the sum over
-- machines of avgRt x success, so that averages weight each machine by its completed calls.
CREATE TABLE metric_seconds (
    resource_id  INTEGER NOT NULL,
    ts           INTEGER NOT NULL,
    pass         INTEGER NOT NULL,
    block        INTEGER NOT NULL,
    success      INTEGER NOT NULL,
    exception    INTEGER NOT NULL,
    rt_sum       INTEGER NOT NULL,
    machines     INTEGER NOT NULL,
    PRIMARY KEY (resource_id, ts)
) WITHOUT ROWID;
CREATE INDEX metric_seconds_ts ON metric_seconds (ts);

-- The same summed per minute (ts is the minute's first millisecond).
CREATE TABLE metric_minutes (
    resource_id  INTEGER NOT NULL,
    ts           INTEGER NOT NULL,
    pass         INTEGER NOT NULL,
    block        INTEGER NOT NULL,
    success      INTEGER NOT NULL,
    exception    INTEGER NOT NULL,
    rt_sum       INTEGER NOT NULL,
    PRIMARY KEY (resource_id, ts)
) WITHOUT ROWID;
CREATE INDEX metric_minutes_ts ON metric_minutes (ts);

-- Per app and rule type: whether the dashboard manages the type (a machine's rules are imported
-- while it does not) and a version bumped by every change.
CREATE TABLE rule_sets (
    app_id     INTEGER NOT NULL REFERENCES apps(id),
    rule_type  TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    PRIMARY KEY (app_id, rule_type)
);

CREATE TABLE rules (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    app_id      INTEGER NOT NULL REFERENCES apps(id),
    rule_type   TEXT    NOT NULL,
    resource    TEXT,
    -- The rule in Sentinel's JSON, as floodgate-core writes it back, without an id.
    body        TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX rules_app_type ON rules (app_id, rule_type, id);

-- Every change of an app's rules of one type: the whole list before and after, as JSON arrays of
-- {"id": .., "rule": {..}}.
CREATE TABLE rule_history (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    app_id      INTEGER NOT NULL REFERENCES apps(id),
    rule_type   TEXT    NOT NULL,
    action      TEXT    NOT NULL,
    actor       TEXT    NOT NULL,
    at          INTEGER NOT NULL,
    before      TEXT    NOT NULL,
    after       TEXT    NOT NULL
);
CREATE INDEX rule_history_app ON rule_history (app_id, id);

-- The last push of each rule type to each machine.
CREATE TABLE pushes (
    machine_id     INTEGER NOT NULL REFERENCES machines(id),
    rule_type      TEXT    NOT NULL,
    version        INTEGER NOT NULL,
    ok             INTEGER NOT NULL,
    -- "success", "not supported", or what went wrong.
    message        TEXT    NOT NULL,
    attempts       INTEGER NOT NULL,
    at             INTEGER NOT NULL,
    next_retry_at  INTEGER,
    PRIMARY KEY (machine_id, rule_type)
);

CREATE TABLE users (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    username       TEXT    NOT NULL UNIQUE,
    password_hash  TEXT    NOT NULL,
    role           TEXT    NOT NULL,
    created_at     INTEGER NOT NULL
);

-- Server-side sessions; the cookie carries the secret, the table its SHA-256.
CREATE TABLE sessions (
    id_hash     TEXT    PRIMARY KEY,
    user_id     INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    csrf_token  TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL
);
CREATE INDEX sessions_user ON sessions (user_id);

CREATE TABLE api_tokens (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id       INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name          TEXT    NOT NULL,
    token_hash    TEXT    NOT NULL UNIQUE,
    created_at    INTEGER NOT NULL,
    last_used_at  INTEGER
);
