/* Reading a published version: its folder, manifest and payload files, each opened relative to
 * its folder's descriptor without following a symlink (sr_delta_priv.h). */
#include "sr_delta_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Opens {sync_dir}/delta-{v:08d} (sfd is sync_dir's folder) into *vfd; a missing folder is
 * an unpublished version. */
int sr_delta_open_version(int *vfd, int sfd, const char *sync_dir, int64_t v, sr_err *err)
{
    char name[32];
    snprintf(name, sizeof(name), "delta-%08lld", (long long)v);
    struct stat st;
    if (fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT)
        return sr_err_set(err, SR_E_DELTA_MANIFEST,
                          "%s/%s/manifest.json: missing (version %lld not published)", sync_dir,
                          name, (long long)v);
    int rc = sr_delta_open_dir(vfd, sfd, name, 0, err);
    if (rc)
        sr_err_prefix(err, "%s/", sync_dir);
    return rc;
}

int sr_delta_load_manifest(sr_delta_manifest **m, int vfd, const char *vdir, int64_t v,
                           int64_t base, sr_err *err)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/manifest.json", vdir);
    char *text;
    size_t len;
    int missing;
    int rc = sr_delta_read_file(&text, &len, &missing, vfd, "manifest.json", path,
                                SR_DELTA_MANIFEST_MAX, SR_E_DELTA_MANIFEST, err);
    if (!rc && missing)
        rc = sr_err_set(err, SR_E_DELTA_MANIFEST, "%s: missing (version %lld not published)", path,
                        (long long)v);
    rc = rc ? rc : sr_delta_manifest_parse(m, text, len, path, err);
    free(text);
    if (!rc && ((*m)->version != v || (*m)->base_version != base))
        rc = sr_err_set(err, SR_E_DELTA_VERSION,
                        "%s: version %lld base_version %lld, expected version %lld on base %lld",
                        path, (long long)(*m)->version, (long long)(*m)->base_version, (long long)v,
                        (long long)base);
    return rc;
}

int sr_delta_open_payload(int *fd, sr_delta_index *ix, int vfd, const char *vdir, const char *name,
                          sr_err *err)
{
    char path[4400];
    snprintf(path, sizeof(path), "%s/%s", vdir, name);
    int missing;
    int rc = sr_delta_open_file(fd, vfd, name, path, &missing, err);
    if (!rc && missing)
        rc = sr_err_set(err, SR_E_DELTA_PAYLOAD, "%s: cannot open: %s", path, strerror(ENOENT));
    if (rc)
        return rc;
    struct stat st;
    uint8_t hdr[SR_DELTA_PAYLOAD_HEADER];
    if (fstat(*fd, &st) != 0 || !S_ISREG(st.st_mode))
        return sr_err_set(err, SR_E_DELTA_PAYLOAD, "%s: not a regular file", path);
    ssize_t got = pread(*fd, hdr, sizeof(hdr), 0);
    uint64_t n, ibytes;
    rc = sr_delta_index_header(&n, &ibytes, hdr, got < 0 ? 0 : (size_t)got, (uint64_t)st.st_size,
                               path, err);
    if (rc)
        return rc;
    uint8_t *raw = malloc(ibytes ? (size_t)ibytes : 1);
    if (!raw)
        return sr_err_set(err, SR_E_NOMEM, "%s: cannot allocate the index", path);
    got = ibytes ? pread(*fd, raw, (size_t)ibytes, SR_DELTA_PAYLOAD_HEADER) : 0;
    if (got < 0 || (uint64_t)got != ibytes)
        rc = sr_err_set(err, SR_E_DELTA_PAYLOAD, "%s: the index is truncated", path);
    rc =
        rc ? rc : sr_delta_index_parse(ix, raw, (size_t)ibytes, n, (uint64_t)st.st_size, path, err);
    free(raw);
    return rc;
}
