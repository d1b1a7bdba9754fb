#!/bin/bash
# usage: scripts/admin-certs.sh KUBECONFIG DIR — writes the client certificate and key of a kubeconfig `kspaces serve`
# wrote (admin.kubeconfig) to DIR/c.pem and DIR/k.pem, for curl's --cert and --key.
set -euo pipefail
grep 'client-certificate-data' "$1" | awk '{print $2}' | base64 -d > "$2/c.pem"
grep 'client-key-data' "$1" | awk '{print $2}' | base64 -d > "$2/k.pem"
