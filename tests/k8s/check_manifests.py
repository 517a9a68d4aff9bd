#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks deploy/kubernetes: every document parses with a known apiVersion and kind; the
extender's RBAC is read-only on exactly nodes, pods, resourceslices and resourceclaims; the
scheduler configurations call the extender with the settings its results depend on
(percentageOfNodesToScore 100, nodeCacheCapable, ignorable, weight over the in-tree scores);
the Service, the container port, --listen and urlPrefix agree. The DRA driver's (issue 22): its
RBAC is exactly get on resourceclaims and nodes, what publishing its slices takes and creating
Events (a GPU unpublished, or back), its
DaemonSet mounts the kubelet's directories and is not privileged, and its resource.k8s.io/v1
objects (DeviceClass, ResourceClaimTemplates) pass tests/k8s/check_resource_v1.py with GpuConfig
parameters gpushare-k8s accepts. Prints one line per problem."""
import glob
import os
import re
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_resource_v1  # noqa: E402

KINDS = {("v1", "Namespace"), ("v1", "ServiceAccount"), ("v1", "Service"), ("v1", "ConfigMap"),
         ("apps/v1", "Deployment"), ("rbac.authorization.k8s.io/v1", "ClusterRole"),
         ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
         ("rbac.authorization.k8s.io/v1", "Role"), ("rbac.authorization.k8s.io/v1", "RoleBinding"),
         ("kubescheduler.config.k8s.io/v1", "KubeSchedulerConfiguration"),
         ("apps/v1", "DaemonSet"), ("resource.k8s.io/v1", "DeviceClass"),
         ("resource.k8s.io/v1", "ResourceClaimTemplate"),
         ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"),
         ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding")}
PLUGIN_RULES = {("resourceclaims", "get"), ("nodes", "get"), ("resourceslices", "get"),
                ("resourceslices", "list"), ("resourceslices", "create"),
                ("resourceslices", "update"), ("resourceslices", "delete"), ("events", "create")}
PLUGIN_MOUNTS = {"/var/lib/kubelet/plugins_registry", "/var/lib/kubelet/plugins/gpu.gpushare.io",
                 "/var/run/cdi", "/run/gpushare"}
GPUCONFIG = {"apiVersion", "kind", "computeMax", "timeLimit", "enforce"}
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


def check_plugin(doc, where):
    """The DRA driver's RBAC, DaemonSet and resource.k8s.io objects."""
    kind, name = doc["kind"], doc.get("metadata", {}).get("name")
    if kind == "ClusterRole" and name == "gpushare-k8s":
        rules = {(r, v) for rule in doc["rules"] for r in rule["resources"] for v in rule["verbs"]}
        if rules != PLUGIN_RULES:
            problems.append(where + ": the plugin's rules are %s" % sorted(rules))
    if kind == "DaemonSet" and name == "gpushare-k8s":
        c = doc["spec"]["template"]["spec"]["containers"][0]
        sc = c.get("securityContext", {})
        mounts = {m["mountPath"] for m in c.get("volumeMounts", [])}
        if sc.get("privileged") or sc.get("allowPrivilegeEscalation", True) or \
                sc.get("capabilities", {}).get("drop") != ["ALL"]:
            problems.append(where + ": the plugin is privileged or keeps capabilities")
        if mounts != PLUGIN_MOUNTS:
            problems.append(where + ": the plugin mounts %s" % sorted(mounts))
        if not any(e.get("name") == "NODE_NAME" for e in c.get("env", [])):
            problems.append(where + ": no NODE_NAME")
    if doc.get("apiVersion") == "resource.k8s.io/v1":
        before = len(check_resource_v1.problems)
        check_resource_v1.check_object(where, doc)
        problems.extend(check_resource_v1.problems[before:])
        spec = doc["spec"].get("spec", doc["spec"])
        for cfg in spec.get("devices", {}).get("config", []) + spec.get("config", []):
            params = cfg.get("opaque", {}).get("parameters", {})
            if set(params) - GPUCONFIG or params.get("kind") != "GpuConfig":
                problems.append(where + ": GpuConfig with %s" % sorted(params))


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
    check_plugin(doc, where)
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
