# Floodgate tasks. Everything here also works with plain cargo: each line of a recipe is a plain cargo
# command.
set shell := ["bash", "-Eeuo", "pipefail", "-c"]

_default:
    @just --list

# Run the demo: the dashboard on 127.0.0.1:8080 and an app sending it traffic.
demo:
    cargo run --release --example dashboard_demo --features transport

# Run every test (what CI runs).
test:
    cargo test --workspace --all-features

# Format check and clippy with warnings denied.
lint:
    cargo fmt --all -- --check
    cargo clippy --workspace --all-targets --all-features -- -D warnings

# Criterion benchmarks (figures go to BENCHMARKS.md).
bench:
    cargo bench -p floodgate-core --bench entry -- --warm-up-time 1 --measurement-time 3
    cargo bench -p floodgate-core --bench flow -- --warm-up-time 1 --measurement-time 3
    cargo bench -p floodgate-core --bench flow_added
    cargo bench -p floodgate-core --bench degrade -- --warm-up-time 1 --measurement-time 3
    cargo bench -p floodgate-core --bench system -- --warm-up-time 1 --measurement-time 3
    cargo bench -p floodgate-core --bench param_flow -- --warm-up-time 1 --measurement-time 3
    cargo bench -p floodgate-core --bench memory
    cargo bench -p floodgate-core --bench rule_reload
    cargo bench -p floodgate-transport --bench agent -- --warm-up-time 1 --measurement-time 3
    cargo bench -p floodgate-tower --features axum --bench layer -- --warm-up-time 1 --measurement-time 3

# Format the code.
fmt:
    cargo fmt --all
