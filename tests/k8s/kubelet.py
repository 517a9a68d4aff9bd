#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A small, honest stand-in for the kubelet's side of DRA, for gpushare-k8s's tests.

It speaks the real gRPC wire format (python3-grpcio, gRPC's own implementation) with messages
generated at run time by protoc from its own copy of the protocol (tests/k8s/proto), and does
what the kubelet does with a DRA plugin:

  watch      the plugin watcher: polls the plugin registry directory for sockets; for a new one
             (or one made again: a new inode) calls Registration.GetInfo, checks the answer
             (type DRAPlugin, "v1.DRAPlugin" among the supported versions, an endpoint that
             answers) and calls NotifyRegistrationStatus with its verdict; a socket that goes
             away deregisters its plugin. The registered plugins are written to a state file.
  prepare    NodePrepareResources for claims NS/NAME/UID, retried as the kubelet's pod sync does
             (a call that fails or a claim with an error is asked again after a backoff that
             doubles); prints the answer as JSON.
  unprepare  NodeUnprepareResources, retried the same way.
  cycle      each claim prepared then unprepared, one after another, each call timed (one JSON
             line per claim; bench/dra_prepare.sh).
  run-pod    the pod's life: reads the pod and its claims from the API server
             (spec.resourceClaims, status.resourceClaimStatuses), prepares them, starts the
             container with podman and the CDI devices prepare returned, waits for it, and
             unprepares them, retrying, when it ends. Exits with the container's status.

What a real kubelet adds and this does not: fsnotify instead of polling, its own checkpoint of
prepared claims, the pod's cgroup and sandbox, CRI instead of podman, health streams, the
30-second wipe of a deregistered driver's ResourceSlices.

  kubelet.py --protos DIR watch --registry DIR --state FILE
  kubelet.py --protos DIR prepare|unprepare|cycle --state FILE --driver D --claim NS/NAME/UID...
             (or --claim '["NS", "NAME", "UID"]': names with any characters)
             [--retries N] [--backoff S] [--timeout S]
  kubelet.py --protos DIR run-pod --state FILE --driver D --api URL --token T --pod NS/NAME
             [--runtime "podman ... run --rm"] [--podman-arg ARG]... [--retries N] [--backoff S]
             -- COMMAND...
"""

import argparse
import atexit
import importlib
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import urllib.request

import grpc

REG = "/pluginregistration.Registration/"
DRA = "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/"
SERVICE = "v1.DRAPlugin"


def log(msg):
    sys.stderr.write("kubelet: %s\n" % msg)
    sys.stderr.flush()


def load_protos(proto_dir):
    """Generates the messages from the stand-in's .proto files into a temporary directory (in
    GS_KUBELET_PB_DIR, the test's own directory, when set: a stand-in stopped by SIGKILL runs no
    atexit and would leave it in /tmp)."""
    out = tempfile.mkdtemp(prefix="gs-kubelet-pb-", dir=os.environ.get("GS_KUBELET_PB_DIR"))
    atexit.register(shutil.rmtree, out, True)
    files = ["kubelet_registration.proto", "kubelet_dra.proto"]
    subprocess.run(["protoc", "-I", proto_dir, "--python_out", out] + files, check=True)
    sys.path.insert(0, out)
    return (importlib.import_module("kubelet_registration_pb2"),
            importlib.import_module("kubelet_dra_pb2"))


def call(channel, path, request, response_type, timeout):
    method = channel.unary_unary(path, request_serializer=lambda m: m.SerializeToString(),
                                 response_deserializer=response_type.FromString)
    return method(request, timeout=timeout)


def write_state(path, plugins):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(plugins, f)
    os.rename(tmp, path)


# ---- the plugin watcher ----

def register(reg, sock, plugins):
    """GetInfo, checks, NotifyRegistrationStatus; the plugin's entry or None."""
    with grpc.insecure_channel("unix:" + sock) as ch:
        info = call(ch, REG + "GetInfo", reg.InfoRequest(), reg.PluginInfo, 10)
        error = ""
        if info.type != "DRAPlugin":
            error = "plugin type %r is not DRAPlugin" % info.type
        elif SERVICE not in info.supported_versions:
            error = "none of %s is supported" % list(info.supported_versions)
        elif not info.endpoint or not stat.S_ISSOCK(os.stat(info.endpoint).st_mode):
            error = "endpoint %r is not a socket" % info.endpoint
        status = reg.RegistrationStatus(plugin_registered=not error, error=error)
        try:
            call(ch, REG + "NotifyRegistrationStatus", status, reg.RegistrationStatusResponse, 10)
        except grpc.RpcError as e:
            log("NotifyRegistrationStatus: %s" % e.details())
    if error:
        log("registration of %s refused: %s" % (info.name, error))
        return None
    log("registered %s (%s) at %s" % (info.name, SERVICE, info.endpoint))
    return {"driver": info.name, "endpoint": info.endpoint, "socket": sock}


def watch(args, reg):
    seen = {}  # socket path -> inode
    plugins = {}  # driver -> entry
    write_state(args.state, plugins)
    while True:
        try:
            names = os.listdir(args.registry)
        except FileNotFoundError:
            names = []
        now = {}
        for name in names:
            path = os.path.join(args.registry, name)
            try:
                st = os.stat(path)
            except FileNotFoundError:
                continue
            if stat.S_ISSOCK(st.st_mode) and not name.startswith("."):
                now[path] = st.st_ino
        changed = False
        for path, ino in now.items():
            if seen.get(path) == ino:
                continue
            try:
                entry = register(reg, path, plugins)
            except (grpc.RpcError, OSError) as e:
                log("GetInfo on %s failed, trying again: %s" % (path, e))
                continue
            seen[path] = ino
            if entry:
                plugins[entry["driver"]] = entry
                changed = True
        for path in list(seen):
            if path not in now:
                del seen[path]
                for driver in [d for d, e in plugins.items() if e["socket"] == path]:
                    log("deregistered %s: its socket is gone" % driver)
                    del plugins[driver]
                    changed = True
        if changed:
            write_state(args.state, plugins)
        time.sleep(args.poll)


# ---- the DRA manager ----

def endpoint(state, driver, wait=10.0):
    deadline = time.time() + wait
    while True:
        try:
            with open(state) as f:
                plugins = json.load(f)
            if driver in plugins:
                return plugins[driver]["endpoint"]
        except (FileNotFoundError, ValueError):
            pass
        if time.time() > deadline:
            raise SystemExit("kubelet: driver %s is not registered" % driver)
        time.sleep(0.05)


def dra_call(args, dra, verb, claims):
    """One call for claims [(ns, name, uid)]: {uid: entry as JSON}; raises on a failed call."""
    req_type = getattr(dra, "Node%sResourcesRequest" % verb)
    resp_type = getattr(dra, "Node%sResourcesResponse" % verb)
    request = req_type(claims=[dra.Claim(namespace=ns, name=name, uid=uid)
                               for ns, name, uid in claims])
    ep = endpoint(args.state, args.driver)
    with grpc.insecure_channel("unix:" + ep) as ch:
        resp = call(ch, DRA + "Node%sResources" % verb, request, resp_type, args.timeout)
    out = {}
    for uid, entry in resp.claims.items():
        e = {"error": entry.error}
        if verb == "Prepare":
            e["devices"] = [{"requests": list(d.request_names), "pool": d.pool_name,
                             "device": d.device_name, "cdi": list(d.cdi_device_ids),
                             "share_id": d.share_id if d.HasField("share_id") else None}
                            for d in entry.devices]
        out[uid] = e
    return out


def with_retries(args, dra, verb, claims):
    """Calls until every claim is answered without error, as the kubelet's pod sync does."""
    pending = list(claims)
    answers = {}
    delay = args.backoff
    for attempt in range(args.retries + 1):
        if attempt:
            time.sleep(delay)
            delay = min(delay * 2, 10.0)
        try:
            got = dra_call(args, dra, verb, pending)
        except grpc.RpcError as e:
            log("Node%sResources failed (attempt %d): %s %s" % (verb, attempt + 1, e.code(),
                                                               e.details()))
            continue
        for ns, name, uid in pending:
            entry = got.get(uid)
            if entry is None:
                entry = {"error": "no answer for claim %s" % uid}
            answers[uid] = entry
            if entry["error"]:
                log("claim %s/%s: %s (attempt %d)" % (ns, name, entry["error"], attempt + 1))
        pending = [c for c in pending if answers[c[2]]["error"]]
        if not pending:
            break
    return answers, not pending


def parse_claims(items):
    """NS/NAME/UID, or a JSON array ["NS", "NAME", "UID"] for names with any characters (a test
    of hostile names: '/', NUL, thousands of characters)."""
    out = []
    for item in items:
        if item.startswith("["):
            ns, name, uid = json.loads(item)
        else:
            ns, name, uid = item.split("/", 2)
        out.append((ns, name, uid))
    return out


def dra_verb(args, dra, verb):
    answers, ok = with_retries(args, dra, verb, parse_claims(args.claim))
    print(json.dumps(answers, sort_keys=True))
    return 0 if ok else 1


def cycle(args, dra):
    """Each claim prepared then unprepared, one after another, each call timed (bench/)."""
    for ns, name, uid in parse_claims(args.claim):
        t0 = time.monotonic()
        prep = dra_call(args, dra, "Prepare", [(ns, name, uid)]).get(uid, {"error": "no answer"})
        t1 = time.monotonic()
        unprep = dra_call(args, dra, "Unprepare", [(ns, name, uid)]).get(uid, {"error": "none"})
        t2 = time.monotonic()
        print(json.dumps({"uid": uid, "prepare_ms": (t1 - t0) * 1e3,
                          "unprepare_ms": (t2 - t1) * 1e3,
                          "error": prep["error"] or unprep["error"]}), flush=True)
    return 0


# ---- a pod ----

def api_get(args, path):
    req = urllib.request.Request(args.api + path, headers={"Authorization": "Bearer " + args.token})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)


def pod_claims(args):
    ns, name = args.pod.split("/", 1)
    pod = api_get(args, "/api/v1/namespaces/%s/pods/%s" % (ns, name))
    names = {s["name"]: s.get("resourceClaimName")
             for s in pod.get("status", {}).get("resourceClaimStatuses", [])}
    claims = []
    for ref in pod.get("spec", {}).get("resourceClaims", []):
        claim_name = ref.get("resourceClaimName") or names.get(ref["name"])
        claim = api_get(args, "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s"
                        % (ns, claim_name))
        claims.append((ns, claim_name, claim["metadata"]["uid"]))
    return claims


def run_pod(args, dra):
    claims = pod_claims(args)
    answers, ok = with_retries(args, dra, "Prepare", claims)
    if not ok:
        log("pod %s: claims not prepared: the pod does not start" % args.pod)
        return 125
    cdi = [i for a in answers.values() for d in a["devices"] for i in d["cdi"]]
    cmd = shlex.split(args.runtime) + [x for i in dict.fromkeys(cdi) for x in ("--device", i)]
    cmd += args.podman_arg + args.command
    log("pod %s: %s" % (args.pod, " ".join(cmd)))
    rc = subprocess.call(cmd)
    log("pod %s: the container exited with %d" % (args.pod, rc))
    _, ok = with_retries(args, dra, "Unprepare", claims)
    return rc if ok else 126


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--protos", required=True)
    sub = ap.add_subparsers(dest="verb", required=True)
    w = sub.add_parser("watch")
    w.add_argument("--registry", required=True)
    w.add_argument("--state", required=True)
    w.add_argument("--poll", type=float, default=0.1)
    for verb in ("prepare", "unprepare", "cycle", "run-pod"):
        p = sub.add_parser(verb)
        p.add_argument("--state", required=True)
        p.add_argument("--driver", default="gpu.gpushare.io")
        p.add_argument("--retries", type=int, default=0)
        p.add_argument("--backoff", type=float, default=0.5)
        p.add_argument("--timeout", type=float, default=45.0)
        if verb == "run-pod":
            p.add_argument("--api", required=True)
            p.add_argument("--token", required=True)
            p.add_argument("--pod", required=True)
            p.add_argument("--runtime", default="podman run --rm",
                           help="the command that starts a container, before its --device options")
            p.add_argument("--podman-arg", action="append", default=[],
                           help="options after the devices (--rootfs DIR last)")
            p.add_argument("command", nargs=argparse.REMAINDER)
        else:
            p.add_argument("--claim", action="append", required=True)
    args = ap.parse_args()
    reg, dra = load_protos(args.protos)
    if args.verb == "watch":
        return watch(args, reg)
    if args.verb == "run-pod":
        if args.command and args.command[0] == "--":
            args.command = args.command[1:]
        return run_pod(args, dra)
    if args.verb == "cycle":
        return cycle(args, dra)
    return dra_verb(args, dra, "Prepare" if args.verb == "prepare" else "Unprepare")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
