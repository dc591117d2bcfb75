# Floodgate tasks. Everything here also works with plain cargo: each line of a recipe is a plain cargo
# command.
set shell := ["bash", "-Eeuo", "pipefail", "-c"]

_default:
    @just --list

# Run the demo: an app guarding a resource, printing passed/blocked per second.
demo:
    cargo run --release --example demo

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
    cargo bench -p floodgate-transport --bench agent -- --warm-up-time 1 --measurement-time 3
    cargo bench -p floodgate-tower --features axum --bench layer -- --warm-up-time 1 --measurement-time 3

# Format the code.
fmt:
    cargo fmt --all
