"""A kopf operator with admission webhooks, as its authors would write one: kopf's own webhook server on
127.0.0.1 (KOPF_PORT) with a certificate like the self-signed one kopf makes (a CA certificate, passed in KOPF_CERT
and KOPF_KEY), and `settings.admission.managed` so that kopf registers its Validating and Mutating
WebhookConfigurations itself. Every review it receives is logged to KOPF_LOG as one JSON line.

Run by tests/tests/kopf_operator.rs as `python kopf_operator.py` with KUBECONFIG set to a tenant admin's.
"""
import json
import os

import kopf

LOG = os.environ["KOPF_LOG"]


def record(kind, body, dryrun):
    meta = body.get("metadata") or {}
    with open(LOG, "a") as log:
        log.write(json.dumps({"handler": kind, "name": meta.get("name"), "namespace": meta.get("namespace"), "dryRun": dryrun}) + "\n")


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_):
    settings.admission.server = kopf.WebhookServer(
        addr="127.0.0.1", port=int(os.environ["KOPF_PORT"]), host="127.0.0.1",
        certfile=os.environ["KOPF_CERT"], pkeyfile=os.environ["KOPF_KEY"], cafile=os.environ["KOPF_CERT"])
    settings.admission.managed = "kopf.kspaces.example"
    settings.posting.enabled = False


@kopf.on.validate("configmaps", id="no-forbidden-data")
def no_forbidden_data(body, warnings, dryrun, **_):
    record("validate", body, dryrun)
    if "forbidden" in (body.get("data") or {}):
        raise kopf.AdmissionError("kopf refuses a ConfigMap with forbidden data")
    warnings.append("checked by kopf")


@kopf.on.mutate("configmaps", id="label-it")
def label_it(body, patch, dryrun, **_):
    record("mutate", body, dryrun)
    patch.metadata.setdefault("labels", {})["kopf-mutated"] = "yes"
