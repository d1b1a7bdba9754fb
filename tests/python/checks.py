"""Shared by the Python client checks: command line, client set-up, and the step runner.

Each check script runs its steps in order against a server given by a kubeconfig, prints `PASS <step>`
after each step that passed, and on the first failure prints `FAIL <step>: <why>` and exits with status 1,
so the Rust test that runs it can tell what went wrong from its output alone.
"""

import argparse
import json
import sys
import time
import traceback

from kubernetes import client, config
from kubernetes.client.rest import ApiException


class CheckFailed(Exception):
    """A step saw something other than what kube-apiserver answers."""


def expect(condition, message):
    """Fails the current step with `message` unless `condition` holds."""
    if not condition:
        raise CheckFailed(message)


def expect_equal(found, wanted, what):
    expect(found == wanted, f"{what}: expected {wanted!r}, got {found!r}")


def eventually(probe, what, timeout=10.0):
    """Polls `probe` until it returns a true value, which is returned; fails the step after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise CheckFailed(f"timed out waiting for {what}")
        time.sleep(0.1)


def api_client():
    """An ApiClient from `--kubeconfig`, exactly as a user would load it."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kubeconfig", required=True, help="the kubeconfig of the user the checks run as")
    parser.add_argument("--namespace", default="default")
    args = parser.parse_args()
    return config.new_client_from_config(config_file=args.kubeconfig), args.namespace


def describe(error):
    """One line for a check or API failure (`API error 404 NotFound: ...`); a traceback for anything else."""
    if isinstance(error, CheckFailed):
        return str(error)
    if isinstance(error, ApiException):
        try:
            status = json.loads(error.body or "{}")
        except ValueError:
            status = {"message": error.body}
        return f"API error {error.status} {status.get('reason', error.reason)}: {status.get('message', '')}"
    return traceback.format_exc()


def run(steps):
    """Runs `(name, step)` pairs in order; exits 1 at the first failure, 0 when all passed."""
    for name, step in steps:
        try:
            step()
        except Exception as error:  # every failure, including client errors, is reported the same way
            print(f"FAIL {name}: {describe(error)}", flush=True)
            sys.exit(1)
        print(f"PASS {name}", flush=True)
    print(f"{len(steps)} passed, 0 failed", flush=True)


__all__ = ["CheckFailed", "api_client", "client", "eventually", "expect", "expect_equal", "run"]
