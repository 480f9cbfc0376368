/* translate.c: CUPTI activity records -> vt_event (pure; see vtcupti.h). */
#include <cupti_activity.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "vtcupti.h"

static bool host_memory(CUpti_ActivityMemoryKind kind)
{
    return kind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE || kind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
}

static int32_t memory_device(const CUpti_ActivityMemory4 *rec)
{
    return host_memory(rec->memoryKind) ? -1 : (int32_t)rec->deviceId;
}

static uint64_t memory_stream(const CUpti_ActivityMemory4 *rec)
{
    return rec->isAsync && rec->streamId != CUPTI_INVALID_STREAM_ID ? rec->streamId : 0;
}

int vtc_translate_memory(const CUpti_ActivityMemory4 *rec, vt_event *out)
{
    if (!rec || !out)
        return -1;
    memset(out, 0, sizeof *out);
    out->ts_ns = rec->timestamp;
    if (rec->address == 0)
        return 0;
    switch (rec->memoryOperationType) {
    case CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION:
        if (rec->bytes == 0)
            return 0;
        out->type = VT_REC_ALLOC;
        out->u.alloc.addr = rec->address;
        out->u.alloc.size = rec->bytes;
        out->u.alloc.device = memory_device(rec);
        out->u.alloc.api = VT_API_CUPTI;
        out->u.alloc.stream = memory_stream(rec);
        return 1;
    case CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE:
        out->type = VT_REC_FREE;
        out->u.free.addr = rec->address;
        out->u.free.device = memory_device(rec);
        out->u.free.api = VT_API_CUPTI;
        return 1;
    default:
        return 0;
    }
}

static const char *pool_op(CUpti_ActivityMemoryPoolOperationType op)
{
    switch (op) {
    case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED:
        return "created";
    case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED:
        return "destroyed";
    case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED:
        return "trimmed";
    default:
        return NULL;
    }
}

int vtc_translate_pool(const CUpti_ActivityMemoryPool3 *rec, vt_event *out, char *buf,
                       size_t buflen)
{
    if (!rec || !out || !buf || buflen == 0)
        return -1;
    memset(out, 0, sizeof *out);
    const char *op = pool_op(rec->memoryPoolOperationType);
    if (!op)
        return 0;
    int n = snprintf(
        buf, buflen,
        "CUPTI memory pool %s: device %" PRIu32 " address 0x%" PRIx64 " size %" PRIu64
        " release_threshold %" PRIu64 " utilized %" PRIu64 " type %s",
        op, rec->deviceId, rec->address, rec->size, rec->releaseThreshold, rec->utilizedSize,
        rec->memoryPoolType == CUPTI_ACTIVITY_MEMORY_POOL_TYPE_IMPORTED ? "imported" : "local");
    if (rec->memoryPoolOperationType == CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED &&
        n >= 0 && (size_t)n < buflen)
        snprintf(buf + n, buflen - (size_t)n, " min_bytes_to_keep %zu", rec->minBytesToKeep);
    out->type = VT_REC_NOTE;
    out->ts_ns = rec->timestamp;
    out->u.note.text = buf;
    return 1;
}
