#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that deploy/kubernetes/*.yaml and the chart's rendering with
deploy/helm/gpushare/ci/manifests-values.yaml are the same objects (helm_chart's part 4): each
object of one is in the other under its kind, namespace and name, with the same content, apart
from the labels the chart adds to every object (app.kubernetes.io/part-of, managed-by, instance,
helm.sh/chart) and the namespace the chart gives the claim templates (the files leave it to
kubectl -n). kube-scheduler-config.yaml (a file for the cluster's own scheduler) is not the
chart's. Usage: check_manifests.py RENDERED.yaml MANIFEST_DIR. Prints one line per difference
(and a diff of the two objects); exit 1 when there is one."""
import difflib
import glob
import json
import os
import sys

import yaml

CHART_LABELS = {"app.kubernetes.io/part-of", "app.kubernetes.io/managed-by",
                "app.kubernetes.io/instance", "helm.sh/chart"}
NOT_THE_CHARTS = {"kube-scheduler-config.yaml"}


def normal(obj):
    meta = obj.setdefault("metadata", {})
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k not in CHART_LABELS}
    if labels:
        meta["labels"] = labels
    else:
        meta.pop("labels", None)
    if obj.get("kind") == "ResourceClaimTemplate":
        meta.pop("namespace", None)
    return obj


def key(obj):
    m = obj["metadata"]
    return (obj["kind"], m.get("namespace", ""), m["name"])


def load(paths):
    out = {}
    for p in paths:
        with open(p) as f:
            for doc in yaml.safe_load_all(f):
                if doc:
                    out[key(normal(doc))] = (doc, os.path.basename(p))
    return out


def main():
    rendered = load([sys.argv[1]])
    files = [p for p in sorted(glob.glob(os.path.join(sys.argv[2], "*.yaml")))
             if os.path.basename(p) not in NOT_THE_CHARTS]
    manifests = load(files)
    problems = 0
    for k in sorted(set(rendered) | set(manifests)):
        name = "%s %s/%s" % (k[0], k[1] or "-", k[2])
        if k not in rendered:
            print("%s: in %s, not in the chart's rendering" % (name, manifests[k][1]))
            problems += 1
        elif k not in manifests:
            print("%s: in the chart's rendering (%s), not in deploy/kubernetes"
                  % (name, rendered[k][1]))
            problems += 1
        elif rendered[k][0] != manifests[k][0]:
            print("%s: %s and the chart's rendering differ:" % (name, manifests[k][1]))
            a = json.dumps(manifests[k][0], indent=1, sort_keys=True).splitlines()
            b = json.dumps(rendered[k][0], indent=1, sort_keys=True).splitlines()
            for line in difflib.unified_diff(a, b, "deploy/kubernetes", "chart", lineterm="", n=1):
                print("    " + line)
            problems += 1
    print("%d objects compared, %d differences" % (len(set(rendered) | set(manifests)), problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
