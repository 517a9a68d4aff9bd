#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks deploy/kubernetes: every document parses with a known apiVersion and kind; the
extender's RBAC is read-only on exactly nodes, pods, resourceslices and resourceclaims; the
scheduler configurations call the extender with the settings its results depend on
(percentageOfNodesToScore 100, nodeCacheCapable, ignorable, weight over the in-tree scores);
the Service, the container port, --listen and urlPrefix agree. Prints one line per problem."""
import glob
import os
import re
import sys

import yaml

KINDS = {("v1", "Namespace"), ("v1", "ServiceAccount"), ("v1", "Service"), ("v1", "ConfigMap"),
         ("apps/v1", "Deployment"), ("rbac.authorization.k8s.io/v1", "ClusterRole"),
         ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
         ("rbac.authorization.k8s.io/v1", "Role"), ("rbac.authorization.k8s.io/v1", "RoleBinding"),
         ("kubescheduler.config.k8s.io/v1", "KubeSchedulerConfiguration")}
EXTENDER_KEYS = {"urlPrefix", "filterVerb", "prioritizeVerb", "preemptVerb", "bindVerb", "weight",
                 "enableHTTPS", "tlsConfig", "httpTimeout", "nodeCacheCapable",
                 "managedResources", "ignorable"}
problems = []


def check_scheduler_config(cfg, where):
    if cfg.get("percentageOfNodesToScore") != 100:
        problems.append(where + ": percentageOfNodesToScore is not 100")
    for ext in cfg.get("extenders", []):
        unknown = set(ext) - EXTENDER_KEYS
        if unknown:
            problems.append(where + ": unknown extender fields %s" % sorted(unknown))
        want = {"filterVerb": "filter", "prioritizeVerb": "prioritize", "nodeCacheCapable": True,
                "ignorable": True}
        for key, value in want.items():
            if ext.get(key) != value:
                problems.append("%s: extender %s is %r, not %r" % (where, key, ext.get(key), value))
        # in-tree score plugins give at most 100 x their weights (13 by default): one step of
        # the extender's 0..10 (weight x 10) must outweigh them.
        if not isinstance(ext.get("weight"), int) or ext["weight"] * 10 <= 100 * 13:
            problems.append(where + ": extender weight too small to decide")
        if not re.match(r"^http://[^/]+:8888/$", ext.get("urlPrefix", "")):
            problems.append(where + ": urlPrefix is not http://HOST:8888/")


def check(doc, where):
    key = (doc.get("apiVersion"), doc.get("kind"))
    if key not in KINDS:
        problems.append("%s: unexpected %s/%s" % (where, *key))
    name = doc.get("metadata", {}).get("name")
    if doc["kind"] == "ClusterRole" and name == "gpushare-scheduler-extender":
        resources = sorted(r for rule in doc["rules"] for r in rule["resources"])
        verbs = {v for rule in doc["rules"] for v in rule["verbs"]}
        if resources != ["nodes", "pods", "resourceclaims", "resourceslices"]:
            problems.append(where + ": the extender's resources are %s" % resources)
        if not verbs <= {"get", "list", "watch"}:
            problems.append(where + ": the extender may %s" % sorted(verbs))
    if doc["kind"] == "KubeSchedulerConfiguration":
        check_scheduler_config(doc, where)
    if doc["kind"] == "ConfigMap":
        for k, text in doc.get("data", {}).items():
            if k.endswith(".yaml"):
                check(yaml.safe_load(text), "%s (%s)" % (where, k))
    if doc["kind"] == "Deployment" and name == "gpushare-scheduler-extender":
        c = doc["spec"]["template"]["spec"]["containers"][0]
        if "--listen=0.0.0.0:8888" not in c["args"] or c["ports"][0]["containerPort"] != 8888:
            problems.append(where + ": the extender does not listen on 8888")
    if doc["kind"] == "Service" and doc["spec"]["ports"][0]["port"] != 8888:
        problems.append(where + ": the Service is not on 8888")


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "deploy/kubernetes"
    files = sorted(glob.glob(os.path.join(root, "*.yaml")))
    if not files:
        problems.append(root + ": no manifests")
    for path in files:
        for i, doc in enumerate(yaml.safe_load_all(open(path))):
            if doc is not None:
                check(doc, "%s#%d" % (os.path.basename(path), i))
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
