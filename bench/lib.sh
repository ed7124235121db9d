# Shared by the bench scripts: start nginx from Debian's package in a private directory
# (1 worker, or $NGINX_WORKERS; 43-byte empty.gif, keep-alive, loopback) and stop it on exit.
#   source bench/lib.sh; start_nginx   → sets $work, $port, $URL
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
WEBTUNE=${WEBTUNE:-$top/target/release/webtune}
NGINX_BIN=${NGINX_BIN:-/usr/sbin/nginx}
# Optional pinning on machines with cores to spare: SERVER_CPUS=2 CLIENT_CPUS=4 bench/...
# keeps nginx and the generator on cores of their own, away from each other's noise.
server_pin=(); client_pin=()
[ -n "${SERVER_CPUS:-}" ] && server_pin=(taskset -c "$SERVER_CPUS")
[ -n "${CLIENT_CPUS:-}" ] && client_pin=(taskset -c "$CLIENT_CPUS")

# Variants of a webtune run, named in $IO by bench/open-vs-closed.sh and bench/vs-wrk2.sh:
#   BACKEND[-KNOB][@base]   BACKEND: the --io value (epoll, uring);
#   -timerfd: io_uring woken by a timerfd as epoll is (WEBTUNE_URING_TIMERFD=1);
#   -each: one wake-up per answer, as before answers were batched (WEBTUNE_NO_ANSWER_BATCH=1);
#   @base: the build in $WEBTUNE_BASE (e.g. main's release build) instead of $WEBTUNE, so
#   two builds run interleaved in one run of the script.
# webtune_variant IO: sets $variant_io (the --io value) and $variant_cmd (env and binary).
webtune_variant() {
  local io=$1 bin=$WEBTUNE
  variant_cmd=(env)
  case $io in *@base) bin=${WEBTUNE_BASE:?"$io needs WEBTUNE_BASE=/path/to/webtune"}; io=${io%@base} ;; esac
  case $io in *-timerfd) variant_cmd+=(WEBTUNE_URING_TIMERFD=1) ;; *-each) variant_cmd+=(WEBTUNE_NO_ANSWER_BATCH=1) ;; esac
  variant_io=${io%%-*}
  variant_cmd+=("$bin")
}

ensure_webtune() {
  [ -x "$WEBTUNE" ] || (cd "$top" && cargo build --release -q -p webtune)
}

start_nginx() {
  work=$(mktemp -d /tmp/webtune-bench.XXXXXX)
  chmod 755 "$work"
  mkdir -p "$work/www"
  printf 'GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff\x21\xf9\x04\x01\x00\x00\x00\x00\x2c\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02\x44\x01\x00\x3b' > "$work/www/empty.gif"
  chmod -R a+rX "$work/www"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  cat > "$work/nginx.conf" <<CONF
daemon off;
worker_processes ${NGINX_WORKERS:-1};
worker_rlimit_nofile 20000;
pid $work/nginx.pid;
error_log $work/error.log;
events { worker_connections 12000; }
http {
  access_log off;
  client_body_temp_path $work/cb; proxy_temp_path $work/px; fastcgi_temp_path $work/fc;
  uwsgi_temp_path $work/uw; scgi_temp_path $work/sc;
  keepalive_requests 1000000;
  keepalive_timeout 60s;
  server { listen 127.0.0.1:$port backlog=4096; root $work/www; }
}
CONF
  "${server_pin[@]}" "$NGINX_BIN" -p "$work/" -c "$work/nginx.conf" -e "$work/error.log" &
  ngx=$!
  trap 'kill -TERM $ngx 2>/dev/null || true; wait $ngx 2>/dev/null || true; rm -rf "$work"' EXIT INT TERM
  for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
  URL=http://127.0.0.1:$port/empty.gif
  ulimit -n 20000 2>/dev/null || true
}

# perf_per_request NAME CMD...: run CMD under `perf stat` and print its system calls, context
# switches and task-clock per completed request (needs root or perf_event_paranoid <= -1).
# The requests are read from wrk's / wrk2's "requests in" line, h2load's "requests:" line,
# or else webtune's result JSON, which CMD must write to $work/w.json.
perf_per_request() {
  local name=$1; shift
  perf stat -e raw_syscalls:sys_enter,context-switches,task-clock -x, -o "$work/perf" -- "$@" > "$work/out" 2>&1 || true
  local reqs
  case $name in
    wrk*) reqs=$(awk '/requests in/ {print $1}' "$work/out") ;;
    h2load*) reqs=$(awk '/^requests:/ {print $8}' "$work/out") ;;
    *) reqs=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["responses"])' "$work/w.json") ;;
  esac
  python3 - "$work/perf" "$name" "${reqs:-0}" <<'PY'
import sys
c = {}
for line in open(sys.argv[1]):
    f = line.strip().split(",")
    if len(f) > 2 and f[0].replace(".", "").isdigit():
        c[f[2]] = float(f[0])
n = max(int(sys.argv[3]), 1)
print(f"  {sys.argv[2]:<24} syscalls {c.get('raw_syscalls:sys_enter', 0) / n:5.2f}  context switches "
      f"{c.get('context-switches', 0) / n:5.2f}  task-clock {1e3 * c.get('task-clock', 0) / n:6.2f} us  ({n} requests)")
PY
}
