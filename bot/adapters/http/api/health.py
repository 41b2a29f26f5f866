"""GET /healthz: whether Redis answers (and has room, and will not evict), whether this
process's clock agrees with Redis's, and whether a model is configured."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse
from redis.exceptions import OutOfMemoryError

from bot.adapters.http.api.who import the_parts
from bot.adapters.http.shared import Parts
from bot.runtime.ports import Unsafe

router = APIRouter()


@router.get("/healthz")
async def healthz(a: Parts = Depends(the_parts)) -> JSONResponse:
    try:
        await a.health.ping()
    except OutOfMemoryError:
        return JSONResponse({"ok": False, "redis": "full: at its maxmemory, writes are refused"}, status_code=503)
    except Unsafe as e:  # it may evict: a thread, a lock or a lease could vanish
        return JSONResponse({"ok": False, "redis": f"evicting: {e}"}, status_code=503)
    except Exception as e:  # any failure to reach Redis makes us unhealthy, not crash
        return JSONResponse({"ok": False, "redis": f"unreachable: {e}"}, status_code=503)
    check = a.service.clock_check
    if check is not None and (off := check.problem()):  # no timed work here until the clocks agree
        return JSONResponse({"ok": False, "redis": "ok", "clock": off, "skew": round(check.skew or 0.0, 1)},
                            status_code=503)
    return JSONResponse({"ok": True, "redis": "ok", "llm": "configured" if a.llm_configured else "none"})
