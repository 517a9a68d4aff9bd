#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Packs local files into a one-layer container image archive that `ctr images import` reads
# (OCI image layout, plus Docker's manifest.json for tools that want it): the k8s-real tests'
# images (the pause image, busybox-static, the project's own programs), since no image registry
# is reachable. No skopeo or buildah needed.
#
# Usage: oci-image.py OUT.tar NAME:TAG [--entrypoint JSON] [--cmd JSON] [--env K=V]...
#                     [--workdir DIR] [--link LINKPATH=TARGET]... SRC=DST...
#   SRC=DST   a file (or directory, recursively) of this machine put at DST in the image; modes
#             kept, owner root, times 0 (the same inputs give the same image digest)
#   --link    a symbolic link in the image (e.g. bin/sh=busybox)
# Output: OUT.tar; prints the image's name and its manifest digest. Exit 1 on a missing SRC.
import argparse
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile


def add_path(tar, src, dst, seen):
    dst = dst.lstrip("/")
    parts = dst.split("/")
    for i in range(1, len(parts)):
        d = "/".join(parts[:i])
        if d and d not in seen:
            seen.add(d)
            ti = tarfile.TarInfo(d)
            ti.type, ti.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(ti)
    st = os.stat(src)
    ti = tarfile.TarInfo(dst)
    ti.mode = st.st_mode & 0o7777
    if os.path.isdir(src):
        ti.type = tarfile.DIRTYPE
        if dst not in seen:
            seen.add(dst)
            tar.addfile(ti)
        for name in sorted(os.listdir(src)):
            add_path(tar, os.path.join(src, name), dst + "/" + name, seen)
        return
    ti.size = st.st_size
    with open(src, "rb") as f:
        tar.addfile(ti, f)


def blob(out, data):
    digest = hashlib.sha256(data).hexdigest()
    info = tarfile.TarInfo("blobs/sha256/" + digest)
    info.size, info.mode = len(data), 0o644
    out.addfile(info, io.BytesIO(data))
    return "sha256:" + digest


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("name")
    ap.add_argument("--entrypoint")
    ap.add_argument("--cmd")
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--workdir", default="/")
    ap.add_argument("--link", action="append", default=[])
    ap.add_argument("files", nargs="*")
    a = ap.parse_intermixed_args()

    layer_raw = io.BytesIO()
    with tarfile.open(fileobj=layer_raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        seen = set()
        for spec in a.files:
            src, _, dst = spec.partition("=")
            if not os.path.exists(src) or not dst:
                print(f"oci-image.py: no such file, or no DST: {spec}", file=sys.stderr)
                return 1
            add_path(tar, src, dst, seen)
        for spec in a.link:
            path, _, target = spec.partition("=")
            ti = tarfile.TarInfo(path.lstrip("/"))
            ti.type, ti.linkname, ti.mode = tarfile.SYMTYPE, target, 0o777
            tar.addfile(ti)
    raw = layer_raw.getvalue()
    diff_id = "sha256:" + hashlib.sha256(raw).hexdigest()
    layer = gzip.compress(raw, mtime=0)

    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {"Env": a.env or ["PATH=/bin:/usr/bin:/sbin:/usr/sbin"], "WorkingDir": a.workdir},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created_by": "gpushare scripts/k8s/oci-image.py"}],
    }
    if a.entrypoint:
        config["config"]["Entrypoint"] = json.loads(a.entrypoint)
    if a.cmd:
        config["config"]["Cmd"] = json.loads(a.cmd)
    cfg = json.dumps(config, sort_keys=True).encode()

    name = a.name
    tag = name.rsplit(":", 1)[1] if ":" in name.rsplit("/", 1)[-1] else "latest"
    with tarfile.open(a.out, "w") as out:
        cfg_d = blob(out, cfg)
        layer_d = blob(out, layer)
        manifest = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "digest": cfg_d, "size": len(cfg)},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                        "digest": layer_d, "size": len(layer)}],
        }
        man = json.dumps(manifest, sort_keys=True).encode()
        man_d = blob(out, man)
        index = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": [{
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": man_d, "size": len(man),
                "platform": {"architecture": "amd64", "os": "linux"},
                "annotations": {"io.containerd.image.name": name,
                                "org.opencontainers.image.ref.name": tag},
            }],
        }
        for fname, data in (("oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode()),
                            ("index.json", json.dumps(index).encode()),
                            ("manifest.json", json.dumps([{
                                "Config": "blobs/sha256/" + cfg_d.split(":")[1],
                                "RepoTags": [name],
                                "Layers": ["blobs/sha256/" + layer_d.split(":")[1]]}]).encode())):
            info = tarfile.TarInfo(fname)
            info.size, info.mode = len(data), 0o644
            out.addfile(info, io.BytesIO(data))
    print(f"{name} {man_d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
