"""Numbered, append-only schema migrations.

A version, once released, is never edited: change the schema by appending a new
(version, name, sql) entry. `evaluator.store.db.migrate` records each in schema_migrations.
"""

from __future__ import annotations

INITIAL = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    name VARCHAR NOT NULL,
    applied_at TIMESTAMP NOT NULL
);
CREATE SEQUENCE run_ids START 1;
CREATE SEQUENCE response_ids START 1;
CREATE SEQUENCE evaluation_ids START 1;
CREATE SEQUENCE metric_result_ids START 1;
CREATE SEQUENCE override_ids START 1;
CREATE TABLE runs (
    run_id INTEGER PRIMARY KEY,
    name VARCHAR NOT NULL UNIQUE,
    source_file VARCHAR,
    source_format VARCHAR,
    content_hash VARCHAR NOT NULL,
    profile VARCHAR NOT NULL,
    ingested_at TIMESTAMP NOT NULL,
    n_responses INTEGER NOT NULL,
    metadata JSON
);
CREATE TABLE questions (
    run_id INTEGER NOT NULL,
    question_id VARCHAR NOT NULL,
    question VARCHAR NOT NULL,
    expected_template VARCHAR,
    expected_routing VARCHAR,
    gold_answers JSON,
    expected_ids JSON
);
CREATE TABLE responses (
    response_id BIGINT NOT NULL,
    run_id INTEGER NOT NULL,
    question_id VARCHAR NOT NULL,
    provider VARCHAR NOT NULL,
    model VARCHAR,
    answer VARCHAR NOT NULL,
    answer_hash VARCHAR NOT NULL,
    template VARCHAR,
    classification VARCHAR,
    answerable BOOLEAN,
    comment VARCHAR,
    outcome VARCHAR,
    metadata JSON,
    source_line INTEGER
);
CREATE TABLE chunks (
    chunk_key VARCHAR NOT NULL,
    chunk_id VARCHAR NOT NULL,
    text VARCHAR NOT NULL
);
CREATE TABLE retrieved (
    response_id BIGINT NOT NULL,
    rank INTEGER NOT NULL,
    chunk_key VARCHAR NOT NULL,
    score DOUBLE
);
CREATE TABLE evaluations (
    evaluation_id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL,
    ruleset VARCHAR NOT NULL,
    rules_hash VARCHAR,
    rules_source VARCHAR,
    created_at TIMESTAMP NOT NULL,
    duration_s DOUBLE,
    n_responses INTEGER NOT NULL
);
CREATE TABLE check_results (
    evaluation_id INTEGER NOT NULL,
    response_id BIGINT NOT NULL,
    check_name VARCHAR NOT NULL,
    verdict VARCHAR NOT NULL,
    reason VARCHAR,
    spans JSON
);
CREATE TABLE response_results (
    evaluation_id INTEGER NOT NULL,
    response_id BIGINT NOT NULL,
    overall VARCHAR NOT NULL,
    is_t3 BOOLEAN NOT NULL,
    template_group VARCHAR NOT NULL
);
CREATE TABLE flags (
    evaluation_id INTEGER NOT NULL,
    response_id BIGINT NOT NULL,
    flag VARCHAR NOT NULL,
    severity VARCHAR NOT NULL,
    spans JSON
);
CREATE TABLE metric_results (
    metric_result_id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL,
    provider VARCHAR NOT NULL,
    metric VARCHAR NOT NULL,
    judge VARCHAR NOT NULL,
    with_overrides BOOLEAN NOT NULL,
    value DOUBLE,
    components JSON,
    computed_at TIMESTAMP NOT NULL
);
CREATE TABLE metric_responses (
    metric_result_id INTEGER NOT NULL,
    response_id BIGINT NOT NULL,
    refused BOOLEAN,
    refused_by VARCHAR,
    answerable BOOLEAN,
    ac_q DOUBLE
);
CREATE TABLE judge_cache (
    judge VARCHAR NOT NULL,
    model VARCHAR NOT NULL,
    prompt_hash VARCHAR NOT NULL,
    reply VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (judge, model, prompt_hash)
);
CREATE TABLE overrides (
    override_id BIGINT PRIMARY KEY,
    response_id BIGINT NOT NULL,
    evaluation_id INTEGER,
    target VARCHAR NOT NULL,
    old_value VARCHAR,
    new_value VARCHAR NOT NULL,
    reason VARCHAR NOT NULL,
    reviewer VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL,
    carried_from BIGINT
);
"""

# The review page looks up a response's override history by response id. Bulk tables get
# no ART index: DuckDB's zone maps serve their run/evaluation filters and indexes slow appends.
OVERRIDE_INDEX = """
CREATE INDEX overrides_response ON overrides (response_id);
"""

# An evaluation keeps the exact rules text it ran with, so highlights can be recomputed
# for display later even after the rules file on disk has changed.
EVALUATION_RULES_TEXT = """
ALTER TABLE evaluations ADD COLUMN rules_text VARCHAR;
ALTER TABLE evaluations ADD COLUMN profile VARCHAR;
ALTER TABLE evaluations ADD COLUMN with_spans BOOLEAN;
"""

# Verdict counts per evaluation x provider x template group x target ('overall' or a check),
# written with the evaluation: the overview and pass rates read a few hundred rows instead of
# joining millions of results to their responses on every page run. Existing evaluations are
# counted here once.
EVALUATION_COUNTS = """
CREATE TABLE evaluation_counts (
    evaluation_id INTEGER NOT NULL,
    provider VARCHAR NOT NULL,
    template_group VARCHAR NOT NULL,
    target VARCHAR NOT NULL,
    verdict VARCHAR NOT NULL,
    n BIGINT NOT NULL
);
INSERT INTO evaluation_counts
SELECT rr.evaluation_id, r.provider, rr.template_group, 'overall', rr.overall, count(*)
FROM response_results rr JOIN responses r ON r.response_id = rr.response_id
GROUP BY ALL;
INSERT INTO evaluation_counts
SELECT c.evaluation_id, r.provider, rr.template_group, c.check_name, c.verdict, count(*)
FROM check_results c
JOIN response_results rr ON rr.evaluation_id = c.evaluation_id AND rr.response_id = c.response_id
JOIN responses r ON r.response_id = c.response_id
GROUP BY ALL;
"""

# Word index of a run's answers and comments (evaluator.pipeline.search_index), built on request:
# Triage's free-text search reads only the answers that contain the search's words.
SEARCH_INDEX = """
CREATE TABLE search_words (
    run_id INTEGER NOT NULL,
    word VARCHAR NOT NULL,
    response_id BIGINT NOT NULL
);
CREATE TABLE search_vocab (
    run_id INTEGER NOT NULL,
    word VARCHAR NOT NULL,
    responses BIGINT NOT NULL
);
CREATE TABLE search_indexes (
    run_id INTEGER PRIMARY KEY,
    built_at TIMESTAMP NOT NULL,
    responses BIGINT NOT NULL,
    words BIGINT NOT NULL
);
"""

# Reviewers' saves carry a token made when they pressed Save: a save retried after a crash or
# while the store was busy (evaluator.review.pending) is written once, never twice.
OVERRIDE_TOKENS = """
ALTER TABLE overrides ADD COLUMN client_token VARCHAR;
CREATE INDEX overrides_client_token ON overrides (client_token);
"""

# Human labels (issue 13): a run defines its labels and their scales; annotators rate responses.
# Append-only like overrides: a new rating is a new row, the latest per (response, annotator,
# label) is the current one. `value` keeps the text as given; `value_num` its number on an
# ordinal or numeric scale (an ordinal value's position in `labels.scale_values`, from 1).
ANNOTATIONS = """
CREATE SEQUENCE annotation_ids START 1;
CREATE TABLE labels (
    run_id INTEGER NOT NULL,
    label VARCHAR NOT NULL,
    scale VARCHAR NOT NULL,
    scale_values JSON,
    description VARCHAR
);
CREATE TABLE annotations (
    annotation_id BIGINT PRIMARY KEY,
    response_id BIGINT NOT NULL,
    annotator VARCHAR NOT NULL,
    label VARCHAR NOT NULL,
    value VARCHAR,
    value_num DOUBLE,
    reason VARCHAR,
    created_at TIMESTAMP NOT NULL,
    source VARCHAR NOT NULL,
    client_token VARCHAR
);
CREATE INDEX annotations_response ON annotations (response_id);
"""

# Saved rule sets (issue 16 §3, the Rule lab): named versions of a complete rules text, each
# saved as a new row (never overwritten), so an evaluation names the exact rules it used.
SAVED_RULESETS = """
CREATE TABLE saved_rulesets (
    name VARCHAR NOT NULL,
    version INTEGER NOT NULL,
    rules_hash VARCHAR NOT NULL,
    rules_text VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL,
    created_by VARCHAR,
    PRIMARY KEY (name, version)
);
"""

# Answers compressed with zstd (issue 16: ingest at 1M). DuckDB's automatic choice tries every
# string compression on each segment of answers and settled on one that wrote 200k answers in
# 2.5 s; zstd wrote them in 1.0 s into a third of the space (generated answers; unique English
# answers: 1.7 s -> 1.2 s, 69 -> 44 MB), and scans and page reads took as long (bench, 2026-11-27).
# DuckDB sets a column's compression only when the table is made: the table is made again. A store
# in a storage format without zstd (made by DuckDB before 1.2; see NEEDS_STORAGE) keeps its answers
# as they are.
ANSWERS_ZSTD = """
CREATE TABLE responses_zstd (
    response_id BIGINT NOT NULL,
    run_id INTEGER NOT NULL,
    question_id VARCHAR NOT NULL,
    provider VARCHAR NOT NULL,
    model VARCHAR,
    answer VARCHAR NOT NULL USING COMPRESSION zstd,
    answer_hash VARCHAR NOT NULL,
    template VARCHAR,
    classification VARCHAR,
    answerable BOOLEAN,
    comment VARCHAR,
    outcome VARCHAR,
    metadata JSON,
    source_line INTEGER
);
INSERT INTO responses_zstd SELECT * FROM responses;
DROP TABLE responses;
ALTER TABLE responses_zstd RENAME TO responses;
"""

# Whether the run's file recorded retrieval at all (issue 28): FALSE when it records none (promptfoo,
# Inspect, ...), so the retrieval checks and flags say so instead of failing for "nothing was
# retrieved"; NULL (every response stored before) and TRUE: recorded, an empty list means nothing.
RETRIEVAL_RECORDED = """
ALTER TABLE responses ADD COLUMN retrieval_recorded BOOLEAN;
"""

# Human span labels (issue 30): the characters of an answer a person marks as unsupported (or
# benign: unsupported but harmless; or a computed span marked as a false alarm). Append-only. A row
# with no span says the annotator read the response and marked nothing: a negative, not a gap.
SPAN_LABELS = """
CREATE SEQUENCE span_label_ids START 1;
CREATE TABLE span_labels (
    span_label_id BIGINT PRIMARY KEY,
    response_id BIGINT NOT NULL,
    annotator VARCHAR NOT NULL,
    span_start INTEGER,
    span_end INTEGER,
    label VARCHAR,
    created_at TIMESTAMP NOT NULL,
    source VARCHAR NOT NULL,
    client_token VARCHAR
);
CREATE INDEX span_labels_response ON span_labels (response_id);
"""

# What a label's values are called where the file names them (InspectorRAGet's display_value: "1" is
# "No", "4" is "Yes"): {value: name}, NULL when the values are their own names (issue 31).
LABEL_VALUE_NAMES = """
ALTER TABLE labels ADD COLUMN value_names JSON;
"""

# Reviewers' saves claimed once (issue 32): a save's token is written here in the save's transaction,
# so two processes applying the same save (two dashboard replicas, on two hosts of a PostgreSQL store)
# cannot both write it: the second fails on the key, tries again and finds the first's rows. And the
# journal of saves not yet written, for a PostgreSQL store (evaluator.review.pending; a store file
# keeps its journal in files beside it, as a busy file cannot take them).
SAVE_TOKENS = """
CREATE TABLE save_tokens (
    client_token VARCHAR PRIMARY KEY,
    created_at TIMESTAMP NOT NULL
);
CREATE TABLE pending_saves (
    token VARCHAR PRIMARY KEY,
    record VARCHAR NOT NULL,
    saved_at DOUBLE NOT NULL,
    state VARCHAR NOT NULL,
    outcome VARCHAR,
    finished_at DOUBLE
);
"""

# A response's rows found by its id in PostgreSQL (issue 32): DuckDB reads a PostgreSQL table by
# pushing the filter down, and without an index PostgreSQL scans the whole table for it (Review of one
# response at 1M: 0.7 s per table read; with the index 0.01 s). Not in a store file: its zone maps serve
# these filters, and an index would slow every bulk append (SERVER_ONLY).
SERVER_LOOKUP_INDEXES = """
CREATE INDEX responses_id ON responses (response_id);
CREATE INDEX retrieved_response ON retrieved (response_id);
CREATE INDEX check_results_response ON check_results (response_id);
CREATE INDEX response_results_response ON response_results (response_id);
CREATE INDEX flags_response ON flags (response_id);
"""

# The lookups a Review page makes besides a response's own rows, in PostgreSQL (issue 32): a question
# by its run and id, and the earlier answers to the same question by the same provider (overrides to
# carry forward). Without them PostgreSQL scans every question (250k at 1M responses) or every response
# for each; SERVER_ONLY as migration 14.
SERVER_ANSWER_INDEXES = """
CREATE INDEX questions_question ON questions (run_id, question_id);
CREATE INDEX responses_question ON responses (question_id, provider);
"""

# Flag counts per evaluation x provider x flag, written with the evaluation (and by the span judge, which
# replaces one flag's rows), and each run's providers, questions and first response id, written at ingest
# (issue 32): the Overview reads them from a few rows instead of counting every flag and response of every
# run on each run of the page (0.6 s each at 1M responses in PostgreSQL), and a picker finds a run's first
# responses by their ids. What is already stored is counted here once.
FLAG_COUNTS_AND_RUN_SIZES = """
CREATE TABLE flag_counts (
    evaluation_id INTEGER NOT NULL,
    provider VARCHAR NOT NULL,
    flag VARCHAR NOT NULL,
    n BIGINT NOT NULL
);
INSERT INTO flag_counts
SELECT f.evaluation_id, r.provider, f.flag, count(*)
FROM flags f JOIN responses r ON r.response_id = f.response_id
GROUP BY ALL;
ALTER TABLE runs ADD COLUMN n_providers INTEGER;
ALTER TABLE runs ADD COLUMN n_questions INTEGER;
ALTER TABLE runs ADD COLUMN first_response_id BIGINT;
UPDATE runs SET n_providers = (SELECT count(DISTINCT x.provider) FROM responses x WHERE x.run_id = runs.run_id),
                n_questions = (SELECT count(*) FROM questions q WHERE q.run_id = runs.run_id),
                first_response_id = (SELECT min(x.response_id) FROM responses x WHERE x.run_id = runs.run_id);
"""

# Migrations that change only how data is stored and use what older storage formats lack: version ->
# the oldest storage format that has it (duckdb_databases().tags['storage_version']). A store in an
# older format records them without running them; what it stores is the same either way.
NEEDS_STORAGE: dict[int, tuple[int, int, int]] = {9: (1, 2, 0)}
# Migrations for a PostgreSQL store only; a store file records them without running them.
SERVER_ONLY = {14, 15}

MIGRATIONS: list[tuple[int, str, str]] = [
    (1, "initial schema", INITIAL),
    (2, "override lookup index", OVERRIDE_INDEX),
    (3, "evaluation rules text and profile", EVALUATION_RULES_TEXT),
    (4, "evaluation verdict counts", EVALUATION_COUNTS),
    (5, "search index", SEARCH_INDEX),
    (6, "override client tokens", OVERRIDE_TOKENS),
    (7, "annotations and labels", ANNOTATIONS),
    (8, "saved rule sets", SAVED_RULESETS),
    (9, "answers compressed with zstd", ANSWERS_ZSTD),
    (10, "whether retrieval was recorded", RETRIEVAL_RECORDED),
    (11, "human span labels", SPAN_LABELS),
    (12, "label value names", LABEL_VALUE_NAMES),
    (13, "save tokens and pending saves", SAVE_TOKENS),
    (14, "lookup indexes in PostgreSQL", SERVER_LOOKUP_INDEXES),
    (15, "question and answer indexes in PostgreSQL", SERVER_ANSWER_INDEXES),
    (16, "flag counts and run sizes", FLAG_COUNTS_AND_RUN_SIZES),
]
