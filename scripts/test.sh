#!/usr/bin/env bash
# Runs every test of unicompute. Installs what is missing first:
#   - Debian packages: the Vulkan loader and Mesa's lavapipe (a CPU implementation of Vulkan),
#     so wgpu finds an adapter on machines without a GPU.
# Set UNICOMPUTE_REQUIRE_WEBGPU=1 (CI does) to make a missing wgpu adapter a failure
# instead of a skipped backend.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
for pkg in libvulkan1 mesa-vulkan-drivers; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ] && command -v apt-get >/dev/null; then
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    echo "== installing ${missing[*]}"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if ! command -v cargo >/dev/null; then
    echo "cargo not found: install Rust with rustup (https://rustup.rs) first" >&2
    exit 1
fi

# wgpu's Vulkan loader warns without a private runtime directory.
if [ -z "${XDG_RUNTIME_DIR:-}" ] || [ ! -d "$XDG_RUNTIME_DIR" ]; then
    export XDG_RUNTIME_DIR="$(mktemp -d)"
fi
chmod 700 "$XDG_RUNTIME_DIR" 2>/dev/null || true

echo "== devices"
cargo run --quiet --release --bin unicompute -- info
echo "== cargo test"
cargo test --release
