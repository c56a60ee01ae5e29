#!/bin/sh
# deploy/compose.yaml's one-shot `influxdb-tokens` service (image influxdb:2.7, its influx CLI):
# with the admin token (the compose secret), make the bucket's two scoped tokens
#   /tokens/worker/influxdb_write.token  write-only (the worker), owned by WORKER_UID
#   /tokens/grafana/influxdb_read.token  read-only (Grafana's InfluxQL: DBRP lookups need only
#                                        read on the bucket), owned by GRAFANA_UID
# each mode 600 in a volume only its reader mounts. A token file InfluxDB still knows is kept
# (a restart of the stack changes nothing); a missing or unknown one is made anew. The admin
# token never leaves this container: not in a file, an argument or the output.
# Environment: INFLUX_HOST, INFLUX_ORG, INFLUXDB_ADMIN_USER, INFLUXDB_BUCKET, WORKER_UID,
# GRAFANA_UID; ADMIN_TOKEN_FILE and TOKENS_DIR move the secret and the volumes (tests).
set -eu
umask 077
INFLUX_TOKEN=$(cat "${ADMIN_TOKEN_FILE:-/run/secrets/influxdb_admin_token}")
export INFLUX_TOKEN
tokens=${TOKENS_DIR:-/tokens}

# the healthcheck can pass while the first-start setup still makes the bucket: wait for it
tries=0
while :; do
    bucket=$(influx bucket list --name "$INFLUXDB_BUCKET" --hide-headers 2>/dev/null |
        awk 'NR == 1 { print $1 }') || bucket=
    [ -n "$bucket" ] && break
    tries=$((tries + 1))
    if [ "$tries" -ge 120 ]; then
        echo "influxdb-tokens: no bucket $INFLUXDB_BUCKET in $INFLUX_ORG after 120 s" >&2
        exit 1
    fi
    sleep 1
done
known=$(influx auth list --json)

# token DIR KIND UID: DIR/influxdb_KIND.token for KIND (write or read) on the bucket
token() {
    file=$1/influxdb_$2.token
    if [ -s "$file" ] && printf '%s' "$known" | grep -qF "\"$(cat "$file")\""; then
        echo "influxdb-tokens: $file kept"
    else
        value=$(influx auth create --user "$INFLUXDB_ADMIN_USER" \
            --description "drainwatch $2 $INFLUXDB_BUCKET" "--$2-bucket" "$bucket" --json |
            sed -n 's/^[[:space:]]*"token":[[:space:]]*"\([^"]*\)".*/\1/p')
        if [ -z "$value" ]; then
            echo "influxdb-tokens: influx auth create gave no $2 token" >&2
            exit 1
        fi
        printf '%s\n' "$value" >"$file.tmp"
        chown "$3" "$file.tmp"
        chmod 600 "$file.tmp"
        mv "$file.tmp" "$file"
        echo "influxdb-tokens: $file made ($2 on bucket $INFLUXDB_BUCKET only)"
    fi
}
token "$tokens/worker" write "$WORKER_UID"
token "$tokens/grafana" read "$GRAFANA_UID"
