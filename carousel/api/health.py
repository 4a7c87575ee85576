"""Liveness (/healthz: the process answers) and readiness (/readyz: the database answers and its schema is
the one this code needs)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from sqlalchemy.exc import SQLAlchemyError

from carousel.api.context import Context
from carousel.api.problems import problem_response
from carousel.db.engine import schema_problem

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz() -> dict[str, Any]:
    return {"status": "ok"}


@router.get("/readyz", responses={503: {"description": "database unreachable or schema not current"}})
def readyz(context: Context) -> JSONResponse:
    try:
        with context.session_factory() as session:
            schema = schema_problem(session.connection())
        problem = None if schema is None else f"database {schema}"
    except SQLAlchemyError as exc:
        problem = f"the database does not answer: {type(exc).__name__}"
    if problem is not None:
        return problem_response(503, detail=problem)
    return JSONResponse({"status": "ready"})
