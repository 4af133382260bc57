# Aliases for the scripts; the scripts are the contract (README, .ci/run).
.PHONY: demo test setup lint fmt

demo:
	./scripts/demo.sh

test:
	./scripts/test.sh

setup:
	./scripts/setup.sh

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
