#!/usr/bin/env bash
# Ensures what the tests start as real processes is installed: Chromium,
# redis-server, zsh, MinIO, Node 22 and 24 (Node 18 is fetched the same way on first use) and
# schemathesis (a venv under the cache dir); for the deploy checks promtool
# (Debian package prometheus), kubernetes-validate (a venv under the cache dir)
# kustomize (kubectl's built-in, else go install) and helm (go install, cached
# under the cache dir); Go's own go tool pprof (the pprof export's test); for
# the console's OpenID Connect test ORY Hydra (built from the Go module proxy in
# a throwaway module, cached under the cache dir).
# Idempotent and quick when everything is present; prints what it installs;
# exits non-zero with a message naming what is missing and how to get it.
set -euo pipefail

# Keep in step with services/api/test/schemathesis/run.ts.
SCHEMATHESIS_VERSION="4.32.5"
SCHEMATHESIS_DIR_DEFAULT="${XDG_CACHE_HOME:-$HOME/.cache}/heapcap/schemathesis-$SCHEMATHESIS_VERSION"
# Keep in step with services/api/test/deploy-tools.ts.
KUBERNETES_VALIDATE_VERSION="1.37.0"
KUBERNETES_VALIDATE_DIR_DEFAULT="${XDG_CACHE_HOME:-$HOME/.cache}/heapcap/kubernetes-validate-$KUBERNETES_VALIDATE_VERSION"
KUSTOMIZE_MODULE="sigs.k8s.io/kustomize/kustomize/v5@v5.5.0"
# Keep in step with services/api/test/deploy-tools.ts.
HELM_VERSION="v3.22.0"
HELM_DIR_DEFAULT="${XDG_CACHE_HOME:-$HOME/.cache}/heapcap/helm-$HELM_VERSION"
# Keep in step with packages/testkit/src/hydra.ts.
HYDRA_VERSION="v2.3.0"
HYDRA_DIR_DEFAULT="${XDG_CACHE_HOME:-$HOME/.cache}/heapcap/hydra-$HYDRA_VERSION"
MINIO_MODULE="github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c"
failed=0

say() { printf 'test-deps: %s\n' "$*"; }
fail() { printf 'test-deps: ERROR: %s\n' "$*" >&2; failed=1; }

# --- Debian packages: chromium (the browser target) and redis-server ---------
missing_pkgs=()
chromium_bin="${HEAPCAP_CHROMIUM:-/usr/bin/chromium}"
if [[ -n "${HEAPCAP_CHROMIUM:-}" ]]; then
  # An explicit binary is the caller's choice: apt cannot fix a wrong path.
  [[ -x "$chromium_bin" ]] || fail "HEAPCAP_CHROMIUM=$chromium_bin is not executable"
elif [[ ! -x "$chromium_bin" ]]; then
  missing_pkgs+=(chromium)
fi
command -v redis-server >/dev/null 2>&1 || missing_pkgs+=(redis-server)
# redis-cli joins the test kit's Redis Cluster (`redis-cli --cluster create`, Redis 5+); Debian ships it in redis-tools.
command -v redis-cli >/dev/null 2>&1 || missing_pkgs+=(redis-tools)
# promtool checks deploy/prometheus's rules; it ships in Debian's prometheus package, with the
# prometheus server that services/console/test/prometheus.test.ts scrapes serve with.
{ command -v promtool && command -v prometheus; } >/dev/null 2>&1 || missing_pkgs+=(prometheus)
# script (util-linux; Debian's bsdutils) gives the CLI a pseudo-terminal in services/serve/test/progress-cli.test.ts.
command -v script >/dev/null 2>&1 || missing_pkgs+=(bsdutils)
# zsh runs the script `heapcap completion zsh` prints (packages/cli/test/completion.test.ts).
command -v zsh >/dev/null 2>&1 || missing_pkgs+=(zsh)

if ((${#missing_pkgs[@]} > 0)); then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    say "installing ${missing_pkgs[*]} (apt-get)"
    if ! { DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing_pkgs[@]}" >/dev/null; }; then
      fail "apt-get install ${missing_pkgs[*]} failed"
    fi
  else
    fail "missing ${missing_pkgs[*]}: run as root: apt-get update && apt-get install -y ${missing_pkgs[*]}"
  fi
  [[ -x "$chromium_bin" ]] || fail "chromium still missing at $chromium_bin"
  command -v redis-server >/dev/null 2>&1 || fail "redis-server still missing"
  command -v redis-cli >/dev/null 2>&1 || fail "redis-cli still missing (Debian package redis-tools)"
  { command -v promtool && command -v prometheus; } >/dev/null 2>&1 || fail "promtool or prometheus still missing (Debian package prometheus)"
  command -v script >/dev/null 2>&1 || fail "script still missing (Debian package bsdutils)"
fi

# --- MinIO (S3-compatible storage), built from source with go install --------
minio_bin=""
if command -v go >/dev/null 2>&1; then
  minio_bin="$(go env GOPATH)/bin/minio"
else
  minio_bin="$HOME/go/bin/minio"
fi
if [[ ! -x "$minio_bin" && -x "$HOME/go/bin/minio" ]]; then
  minio_bin="$HOME/go/bin/minio"
fi
if [[ ! -x "$minio_bin" ]]; then
  if command -v go >/dev/null 2>&1; then
    # A full build takes several minutes on 2 cores; later runs skip it.
    say "installing MinIO: go install $MINIO_MODULE (slow the first time)"
    if ! go install "$MINIO_MODULE"; then
      fail "go install $MINIO_MODULE failed"
    fi
    [[ -x "$minio_bin" ]] || fail "MinIO not found at $minio_bin after go install"
  else
    fail "MinIO missing at $minio_bin and no Go toolchain to build it: install Go, then go install $MINIO_MODULE"
  fi
fi

# --- go tool pprof (part of the Go toolchain): services/serve/test/profiles.test.ts reads heapcap's
# pprof exports with it (its first run builds it, ~15 s, cached in GOCACHE; the test allows 240 s).
if command -v go >/dev/null 2>&1; then
  go tool -n pprof >/dev/null 2>&1 || fail "go tool pprof is not available: the Go toolchain is incomplete"
else
  fail "no Go toolchain: services/serve/test/profiles.test.ts runs go tool pprof on heapcap's pprof export (install Go from the Debian package golang-go or go.dev)"
fi

# --- Node 22 from the npm registry (cached in ~/.npm/_npx after the first run) ---
if [[ -n "${HEAPCAP_TEST_NODE22:-}" ]]; then
  [[ -x "$HEAPCAP_TEST_NODE22" ]] || fail "HEAPCAP_TEST_NODE22=$HEAPCAP_TEST_NODE22 is not executable"
else
  # cwd outside the workspace so npx does not consult its package.json.
  if ! node22_version="$(cd /tmp && NODE_OPTIONS= npx -y node@22 --version 2>/dev/null)"; then
    fail "cannot run Node 22 via 'npx -y node@22' (npm registry unreachable?); or set HEAPCAP_TEST_NODE22"
  elif [[ "$node22_version" != v22.* ]]; then
    fail "npx -y node@22 --version printed '$node22_version', expected v22.x"
  fi
fi

# --- Node 24 the same way (allocation-site tests: packages/analysis/test/profile.test.ts) ---
if [[ -n "${HEAPCAP_TEST_NODE24:-}" ]]; then
  [[ -x "$HEAPCAP_TEST_NODE24" ]] || fail "HEAPCAP_TEST_NODE24=$HEAPCAP_TEST_NODE24 is not executable"
elif ! node24_version="$(cd /tmp && NODE_OPTIONS= npx -y node@24 --version 2>/dev/null)"; then
  fail "cannot run Node 24 via 'npx -y node@24' (npm registry unreachable?); or set HEAPCAP_TEST_NODE24"
elif [[ "$node24_version" != v24.* ]]; then
  fail "npx -y node@24 --version printed '$node24_version', expected v24.x"
fi

# --- Python tools (PyPI), each pinned in its own venv under the cache dir ----
# A venv so the system site-packages are never touched; reused when present.
# pip_tool PACKAGE VERSION VENV BINARY OVERRIDE_VAR
pip_tool() {
  local pkg="$1" version="$2" venv="$3" bin="$4" override_var="$5"
  local override="${!override_var:-}"
  if [[ -n "$override" ]]; then
    [[ -x "$override" ]] || fail "$override_var=$override is not executable"
    return
  fi
  [[ -x "$venv/bin/$bin" ]] && [[ "$("$venv/bin/$bin" --version 2>/dev/null)" == *"$version"* ]] && return
  if ! command -v python3 >/dev/null 2>&1; then
    fail "python3 is missing (needed for $pkg): apt-get install -y python3 python3-venv"
    return
  fi
  say "installing $pkg $version into $venv (pip)"
  rm -rf "$venv"
  if ! { python3 -m venv "$venv" && "$venv/bin/pip" install -q --disable-pip-version-check "$pkg==$version"; }; then
    fail "pip install $pkg==$version into $venv failed (PyPI unreachable? python3-venv missing: apt-get install python3-venv)"
    rm -rf "$venv"
  fi
}
# The API contract test runs `st` against a live `heapcap serve`.
pip_tool schemathesis "$SCHEMATHESIS_VERSION" "$SCHEMATHESIS_DIR_DEFAULT" st HEAPCAP_SCHEMATHESIS
# The deploy test validates every Kubernetes manifest (the package ships the schemas).
pip_tool kubernetes-validate "$KUBERNETES_VALIDATE_VERSION" "$KUBERNETES_VALIDATE_DIR_DEFAULT" kubernetes-validate HEAPCAP_KUBERNETES_VALIDATE

# --- kustomize: kubectl's built-in, a kustomize binary, or go install ---------
if ! command -v kubectl >/dev/null 2>&1 && ! command -v kustomize >/dev/null 2>&1 && [[ ! -x "$HOME/go/bin/kustomize" ]]; then
  if command -v go >/dev/null 2>&1; then
    say "installing kustomize: go install $KUSTOMIZE_MODULE"
    go install "$KUSTOMIZE_MODULE" || fail "go install $KUSTOMIZE_MODULE failed"
  else
    fail "no kubectl or kustomize, and no Go toolchain to build kustomize: go install $KUSTOMIZE_MODULE"
  fi
fi

# --- helm: `helm template` renders deploy/helm/heapcap for the deploy test -----
# Built from source (Go modules are served where release downloads are not);
# minutes on 2 cores the first time, then reused from the cache dir.
if [[ -n "${HEAPCAP_HELM:-}" ]]; then
  [[ -x "$HEAPCAP_HELM" ]] || fail "HEAPCAP_HELM=$HEAPCAP_HELM is not executable"
elif [[ ! -x "$HELM_DIR_DEFAULT/helm" ]]; then
  if command -v go >/dev/null 2>&1; then
    say "installing helm: GOBIN=$HELM_DIR_DEFAULT go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION (slow the first time)"
    if ! GOBIN="$HELM_DIR_DEFAULT" go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"; then
      fail "go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION failed"
    fi
    [[ -x "$HELM_DIR_DEFAULT/helm" ]] || fail "helm not found at $HELM_DIR_DEFAULT/helm after go install"
  else
    fail "helm missing at $HELM_DIR_DEFAULT/helm and no Go toolchain to build it: GOBIN=$HELM_DIR_DEFAULT go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
  fi
fi

# --- ORY Hydra: the real OpenID provider of the console's OIDC test ----------
# `go install github.com/ory/hydra/v2@v2.3.0` is refused ("The go.mod file for
# the module providing named packages contains one or more replace
# directives"), and `go get -tool` alone builds against the wrong pop
# ("p.conn.Store.SQLDB undefined"): so a throwaway module takes Hydra's own
# requirements and its pop replacement (ory/pop), then builds with SQLite
# (cgo: needs gcc). Minutes on 2 cores the first time, then reused from the
# cache dir.
if [[ -n "${HEAPCAP_HYDRA:-}" ]]; then
  [[ -x "$HEAPCAP_HYDRA" ]] || fail "HEAPCAP_HYDRA=$HEAPCAP_HYDRA is not executable"
elif [[ ! -x "$HYDRA_DIR_DEFAULT/hydra" ]]; then
  if command -v go >/dev/null 2>&1; then
    say "installing hydra: go build github.com/ory/hydra/v2@$HYDRA_VERSION in a throwaway module (slow the first time)"
    hydra_mod="$(mktemp -d)"
    if (
      set -e
      cd "$hydra_mod"
      go mod init heapcap.test/hydra-build >/dev/null 2>&1
      go mod download -json "github.com/ory/hydra/v2@$HYDRA_VERSION" >/dev/null
      hydra_src="$(go mod download -json "github.com/ory/hydra/v2@$HYDRA_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
      {
        echo "module heapcap.test/hydra-build"
        echo "go 1.22"
        grep '^replace github.com/gobuffalo/pop/v6 ' "$hydra_src/go.mod"
        sed -n '/^require (/,$p' "$hydra_src/go.mod"
        echo "require github.com/ory/hydra/v2 $HYDRA_VERSION"
      } >go.mod
      # The sqlite tag (cgo) gives DSN=memory, the in-memory store the tests run Hydra on.
      CGO_ENABLED=1 GOFLAGS=-mod=mod go build -tags sqlite,sqlite_omit_load_extension -o "$HYDRA_DIR_DEFAULT/hydra" "github.com/ory/hydra/v2"
    ); then
      :
    else
      fail "building hydra $HYDRA_VERSION failed (see above)"
    fi
    rm -rf "$hydra_mod"
    [[ -x "$HYDRA_DIR_DEFAULT/hydra" ]] || fail "hydra not found at $HYDRA_DIR_DEFAULT/hydra after the build"
  else
    fail "hydra missing at $HYDRA_DIR_DEFAULT/hydra and no Go toolchain to build it (see the Hydra part of scripts/test-deps.sh)"
  fi
fi

if ((failed)); then
  say "some test dependencies are missing (see above)"
  exit 1
fi
say "ok (chromium, redis-server, minio at $minio_bin, node 22, node 24, schemathesis $SCHEMATHESIS_VERSION, promtool, kubernetes-validate $KUBERNETES_VALIDATE_VERSION, helm $HELM_VERSION, hydra $HYDRA_VERSION)"
