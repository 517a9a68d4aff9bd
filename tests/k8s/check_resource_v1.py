#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks resource.k8s.io/v1 objects against the API's field names, types and validation rules,
as gpushare's tests need them: ResourceSlices (one pool's, whole), ResourceClaims,
ResourceClaimTemplates and DeviceClasses. Written for gpushare from the published Go types
(k8s.io/api resource/v1 types.go; the rules their comments state), Python standard library only.

Unknown fields are errors (the API server drops them, which would hide a typo); so are missing
required fields, values of the wrong JSON type, malformed names and quantities, and the
cross-field rules of a pool: one generation, resourceSliceCount slices, unique device names,
devices or shared counters per slice, counter sets that exist and suffice, a requestPolicy only
with allowMultipleAllocations and consistent with the capacity.

  check_resource_v1.py slices FILE      a List (or array) of one pool's ResourceSlices
  check_resource_v1.py objects FILE...  JSON or YAML-free JSON documents of any of the kinds

Prints one line per problem and exits 1 when there is any; prints "ok: ..." otherwise.
"""

import json
import re
import sys
from decimal import Decimal

API = "resource.k8s.io/v1"
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
DNS_SUB = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
C_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,31}$")
QUANTITY = re.compile(r"^([+-]?)(\d+(\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?$")
SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")
SUFFIX = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
          "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "k": 10**3,
          "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
META = {"name", "generateName", "namespace", "uid", "resourceVersion", "generation",
        "creationTimestamp", "deletionTimestamp", "labels", "annotations", "ownerReferences",
        "finalizers", "managedFields", "deletionGracePeriodSeconds"}

problems = []


def bad(where, msg):
    problems.append("%s: %s" % (where, msg))


def quantity(where, v):
    """The quantity's value as a Decimal, or None after reporting."""
    if not isinstance(v, str) or not QUANTITY.match(v):
        bad(where, "not a quantity: %r" % (v,))
        return None
    m = QUANTITY.match(v)
    num = Decimal(m.group(1) + m.group(2))
    suf = m.group(4) or ""
    if suf[:1] in ("e", "E"):
        return num * Decimal(10) ** int(suf[1:])
    return num * Decimal(SUFFIX.get(suf, 1))


def fields(where, obj, allowed, required=()):
    if not isinstance(obj, dict):
        bad(where, "not an object")
        return False
    for k in obj:
        if k not in allowed:
            bad(where, "unknown field %r" % k)
    for k in required:
        if k not in obj:
            bad(where, "missing %r" % k)
    return True


def typed(where, v, t):
    ok = {"string": isinstance(v, str), "int": isinstance(v, int) and not isinstance(v, bool),
          "bool": isinstance(v, bool), "list": isinstance(v, list),
          "object": isinstance(v, dict)}[t]
    if not ok:
        bad(where, "not a %s: %r" % (t, v))
    return ok


def qualified(where, name):
    domain, _, ident = name.rpartition("/")
    if (domain and (len(domain) > 63 or not DNS_SUB.match(domain))) or not C_IDENT.match(ident):
        bad(where, "not a qualified name: %r" % name)


def metadata(where, meta, named=True):
    if not fields(where, meta, META):
        return
    if named and not (meta.get("name") or meta.get("generateName")):
        bad(where, "no name")
    if "name" in meta and (not isinstance(meta["name"], str) or not DNS_SUB.match(meta["name"])):
        bad(where + ".name", "not a DNS subdomain: %r" % meta.get("name"))


def node_selector(where, sel):
    if fields(where, sel, {"nodeSelectorTerms"}, ["nodeSelectorTerms"]):
        typed(where + ".nodeSelectorTerms", sel["nodeSelectorTerms"], "list")


# ---- ResourceSlice ----

def attribute(where, a):
    kinds = {"int", "bool", "string", "version", "ints", "bools", "strings", "versions"}
    if not fields(where, a, kinds):
        return
    if len(a) != 1:
        bad(where, "exactly one of int, bool, string, version must be set")
        return
    (k, v), = a.items()
    if k == "int":
        typed(where + ".int", v, "int")
    elif k == "bool":
        typed(where + ".bool", v, "bool")
    elif k == "string" and typed(where + ".string", v, "string") and len(v) > 64:
        bad(where, "a string attribute longer than 64")
    elif k == "version" and typed(where + ".version", v, "string") and not SEMVER.match(v):
        bad(where, "not a semantic version: %r" % v)


def request_policy(where, p, value):
    if not fields(where, p, {"default", "validValues", "validRange"}):
        return
    if "validValues" in p and "validRange" in p:
        bad(where, "validValues and validRange are exclusive")
    dflt = quantity(where + ".default", p["default"]) if "default" in p else None
    r = p.get("validRange")
    if r is None:
        return
    if not fields(where + ".validRange", r, {"min", "max", "step"}, ["min"]) or dflt is None:
        bad(where, "a validRange needs a default")
        return
    lo = quantity(where + ".validRange.min", r.get("min"))
    hi = quantity(where + ".validRange.max", r["max"]) if "max" in r else None
    step = quantity(where + ".validRange.step", r["step"]) if "step" in r else None
    if lo is None or value is None:
        return
    if not (0 <= lo <= value):
        bad(where, "validRange.min must be within 0 and the capacity")
    if dflt < lo or dflt > value or (hi is not None and (dflt > hi or hi > value)):
        bad(where, "the default must be within the range and the capacity")
    if step is not None and (lo + step > value or (dflt - lo) % step != 0 and dflt % step != 0):
        bad(where, "the default must be a multiple of step, min + step within the capacity")


def capacity(where, c, multiple):
    if not fields(where, c, {"value", "requestPolicy"}, ["value"]):
        return
    value = quantity(where + ".value", c["value"])
    if "requestPolicy" in c:
        if not multiple:
            bad(where, "a requestPolicy needs allowMultipleAllocations")
        request_policy(where + ".requestPolicy", c["requestPolicy"], value)


DEVICE_FIELDS = {"name", "attributes", "capacity", "consumesCounters", "nodeName", "nodeSelector",
                 "allNodes", "taints", "bindsToNode", "bindingConditions",
                 "bindingFailureConditions", "allowMultipleAllocations",
                 "nodeAllocatableResources"}


def counters(where, cs):
    if not typed(where, cs, "object"):
        return {}
    if len(cs) > 32:
        bad(where, "more than 32 counters")
    out = {}
    for name, c in cs.items():
        if not DNS_LABEL.match(name):
            bad(where, "counter name not a DNS label: %r" % name)
        if fields("%s[%s]" % (where, name), c, {"value"}, ["value"]):
            out[name] = quantity("%s[%s].value" % (where, name), c["value"])
    return out


def device(where, d, uses):
    if not fields(where, d, DEVICE_FIELDS, ["name"]):
        return
    if not isinstance(d["name"], str) or not DNS_LABEL.match(d["name"]):
        bad(where + ".name", "not a DNS label: %r" % d.get("name"))
    multiple = d.get("allowMultipleAllocations", False)
    typed(where + ".allowMultipleAllocations", multiple, "bool")
    attrs, caps = d.get("attributes", {}), d.get("capacity", {})
    if typed(where + ".attributes", attrs, "object"):
        for k, v in attrs.items():
            qualified(where + ".attributes", k)
            attribute("%s.attributes[%s]" % (where, k), v)
    if typed(where + ".capacity", caps, "object"):
        for k, v in caps.items():
            qualified(where + ".capacity", k)
            capacity("%s.capacity[%s]" % (where, k), v, multiple)
    if len(attrs) + len(caps) > 32:
        bad(where, "more than 32 attributes and capacities")
    cc = d.get("consumesCounters", [])
    if typed(where + ".consumesCounters", cc, "list"):
        if len(cc) > 2:
            bad(where, "more than 2 counter consumptions")
        for i, c in enumerate(cc):
            w = "%s.consumesCounters[%d]" % (where, i)
            if fields(w, c, {"counterSet", "counters"}, ["counterSet", "counters"]):
                uses.append((w, c["counterSet"], counters(w + ".counters", c["counters"])))


SPEC_FIELDS = {"driver", "pool", "nodeName", "nodeSelector", "allNodes", "devices",
               "perDeviceNodeSelection", "sharedCounters", "partitionTypeAttribute",
               "skipNodeOperations"}


def slice_spec(where, spec, pool_sets, uses, names):
    if not fields(where, spec, SPEC_FIELDS, ["driver", "pool"]):
        return None
    drv = spec["driver"]
    if not isinstance(drv, str) or len(drv) > 63 or not DNS_SUB.match(drv):
        bad(where + ".driver", "not a DNS subdomain of 63 at most: %r" % drv)
    pool = spec["pool"]
    if fields(where + ".pool", pool, {"name", "generation", "resourceSliceCount"},
              ["name", "generation", "resourceSliceCount"]):
        typed(where + ".pool.name", pool["name"], "string")
        typed(where + ".pool.generation", pool["generation"], "int")
        if typed(where + ".pool.resourceSliceCount", pool["resourceSliceCount"], "int") and \
                pool["resourceSliceCount"] < 1:
            bad(where + ".pool", "resourceSliceCount must be above zero")
    chosen = [k for k in ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")
              if k in spec]
    if len(chosen) != 1:
        bad(where, "exactly one of nodeName, nodeSelector, allNodes, perDeviceNodeSelection")
    if "nodeName" in spec:
        typed(where + ".nodeName", spec["nodeName"], "string")
    if "nodeSelector" in spec:
        node_selector(where + ".nodeSelector", spec["nodeSelector"])
    if "devices" in spec and "sharedCounters" in spec:
        bad(where, "devices and sharedCounters are exclusive")
    devs = spec.get("devices", [])
    if typed(where + ".devices", devs, "list"):
        start = len(uses)
        for i, d in enumerate(devs):
            device("%s.devices[%d]" % (where, i), d, uses)
            if isinstance(d, dict) and d.get("name") in names:
                bad(where, "device %r twice in the pool" % d.get("name"))
            names.add(d.get("name") if isinstance(d, dict) else None)
        limit = 64 if len(uses) > start else 128
        if len(devs) > limit:
            bad(where, "%d devices (at most %d)" % (len(devs), limit))
    sets = spec.get("sharedCounters", [])
    if typed(where + ".sharedCounters", sets, "list"):
        if len(sets) > 8:
            bad(where, "more than 8 counter sets")
        for i, s in enumerate(sets):
            w = "%s.sharedCounters[%d]" % (where, i)
            if fields(w, s, {"name", "counters"}, ["name", "counters"]):
                if not DNS_LABEL.match(str(s["name"])) or s["name"] in pool_sets:
                    bad(w, "name not a DNS label, or twice in the pool: %r" % s["name"])
                pool_sets[s["name"]] = counters(w + ".counters", s["counters"])
    return pool if isinstance(pool, dict) else None


def check_pool(slices):
    pool_sets, uses, names, pools = {}, [], set(), []
    for i, s in enumerate(slices):
        w = "slice[%d] %s" % (i, s.get("metadata", {}).get("name") if isinstance(s, dict) else "")
        if not fields(w, s, {"apiVersion", "kind", "metadata", "spec"}, ["apiVersion", "kind",
                                                                         "metadata", "spec"]):
            continue
        if s["apiVersion"] != API or s["kind"] != "ResourceSlice":
            bad(w, "not a %s ResourceSlice" % API)
        metadata(w + ".metadata", s["metadata"])
        pools.append(slice_spec(w + ".spec", s["spec"], pool_sets, uses, names))
    gens = {(p or {}).get("generation") for p in pools}
    counts = {(p or {}).get("resourceSliceCount") for p in pools}
    if len(gens) != 1 or len({(p or {}).get("name") for p in pools}) != 1:
        bad("pool", "slices of more than one pool or generation: %s" % sorted(map(str, gens)))
    if counts != {len(slices)}:
        bad("pool", "resourceSliceCount %s but %d slices" % (sorted(map(str, counts)), len(slices)))
    for w, name, need in uses:
        have = pool_sets.get(name)
        if have is None:
            bad(w, "counter set %r is not in the pool" % name)
            continue
        for counter, amount in need.items():
            if counter not in have or (amount is not None and have[counter] is not None
                                       and amount > have[counter]):
                bad(w, "counter %r of set %r missing or too small" % (counter, name))


# ---- claims, templates, classes ----

REQUEST_EXACT = {"deviceClassName", "selectors", "allocationMode", "count", "adminAccess",
                 "tolerations", "capacity"}


def exact_request(where, e):
    if not fields(where, e, REQUEST_EXACT, ["deviceClassName"]):
        return
    typed(where + ".deviceClassName", e["deviceClassName"], "string")
    if e.get("allocationMode", "ExactCount") not in ("ExactCount", "All"):
        bad(where, "allocationMode is ExactCount or All")
    if "count" in e and typed(where + ".count", e["count"], "int") and e["count"] < 1:
        bad(where, "count must be above zero")
    for i, s in enumerate(e.get("selectors", [])):
        if fields("%s.selectors[%d]" % (where, i), s, {"cel"}, ["cel"]):
            fields("%s.selectors[%d].cel" % (where, i), s["cel"], {"expression"}, ["expression"])
    cap = e.get("capacity")
    if cap is not None and fields(where + ".capacity", cap, {"requests"}, ["requests"]):
        for k, v in cap["requests"].items():
            qualified(where + ".capacity.requests", k)
            quantity("%s.capacity.requests[%s]" % (where, k), v)


def claim_spec(where, spec):
    if not fields(where, spec, {"devices"}):
        return
    devs = spec.get("devices", {})
    if not fields(where + ".devices", devs, {"requests", "constraints", "config"}):
        return
    for i, r in enumerate(devs.get("requests", [])):
        w = "%s.devices.requests[%d]" % (where, i)
        if fields(w, r, {"name", "exactly", "firstAvailable"}, ["name"]):
            if not DNS_LABEL.match(str(r["name"])):
                bad(w, "name not a DNS label")
            if ("exactly" in r) == ("firstAvailable" in r):
                bad(w, "exactly one of exactly and firstAvailable")
            if "exactly" in r:
                exact_request(w + ".exactly", r["exactly"])
    for i, c in enumerate(devs.get("config", [])):
        w = "%s.devices.config[%d]" % (where, i)
        if fields(w, c, {"requests", "opaque"}, ["opaque"]):
            fields(w + ".opaque", c["opaque"], {"driver", "parameters"}, ["driver", "parameters"])


def class_spec(where, spec):
    if not fields(where, spec, {"selectors", "config", "extendedResourceName"}):
        return
    for i, s in enumerate(spec.get("selectors", [])):
        if fields("%s.selectors[%d]" % (where, i), s, {"cel"}, ["cel"]):
            fields("%s.selectors[%d].cel" % (where, i), s["cel"], {"expression"}, ["expression"])
    for i, c in enumerate(spec.get("config", [])):
        w = "%s.config[%d]" % (where, i)
        if fields(w, c, {"opaque"}, ["opaque"]):
            fields(w + ".opaque", c["opaque"], {"driver", "parameters"}, ["driver", "parameters"])
    if "extendedResourceName" in spec:
        typed(where + ".extendedResourceName", spec["extendedResourceName"], "string")


def check_object(where, obj):
    kind = obj.get("kind") if isinstance(obj, dict) else None
    if kind == "ResourceSlice":
        return check_pool([obj])
    if not fields(where, obj, {"apiVersion", "kind", "metadata", "spec", "status"},
                  ["apiVersion", "kind", "metadata", "spec"]):
        return None
    if obj["apiVersion"] != API:
        bad(where, "apiVersion is not %s" % API)
    metadata(where + ".metadata", obj["metadata"])
    if kind == "ResourceClaim":
        claim_spec(where + ".spec", obj["spec"])
    elif kind == "ResourceClaimTemplate":
        t = obj["spec"]
        if fields(where + ".spec", t, {"metadata", "spec"}, ["spec"]):
            claim_spec(where + ".spec.spec", t["spec"])
    elif kind == "DeviceClass":
        class_spec(where + ".spec", obj["spec"])
    else:
        bad(where, "not a kind of %s this check knows: %r" % (API, kind))
    return None


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("slices", "objects"):
        sys.exit(__doc__)
    if sys.argv[1] == "slices":
        with open(sys.argv[2]) as f:
            data = json.load(f)
        items = data.get("items", []) if isinstance(data, dict) else data
        check_pool(items)
        what = "%d slices" % len(items)
    else:
        n = 0
        for path in sys.argv[2:]:
            with open(path) as f:
                data = json.load(f)
            for i, obj in enumerate(data if isinstance(data, list) else [data]):
                check_object("%s[%d]" % (path, i), obj)
                n += 1
        what = "%d objects" % n
    for p in problems:
        print(p)
    if problems:
        sys.exit(1)
    print("ok: %s follow %s" % (what, API))


if __name__ == "__main__":
    main()
