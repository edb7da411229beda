"""What the audit reports: a :class:`Finding`, a :class:`Problem` (a file it could not
follow), and the :class:`Policy` each rule module declares (name, severity, description)."""

from __future__ import annotations


class Finding:
    """One report: where, which rule, how bad, what happens, what to write instead."""

    __slots__ = ("file", "line", "message", "rule", "severity", "suggestion")

    def __init__(
        self, file: str, line: int, rule: str, message: str, suggestion: str, severity: str
    ) -> None:
        self.file = file
        self.line = line
        self.rule = rule
        self.severity = severity
        self.message = message
        self.suggestion = suggestion

    def as_dict(self) -> dict[str, object]:
        """The JSON shape: file, line, rule, severity, message, suggestion."""
        return {
            "file": self.file,
            "line": self.line,
            "rule": self.rule,
            "severity": self.severity,
            "message": self.message,
            "suggestion": self.suggestion,
        }

    def __repr__(self) -> str:
        return f"<Finding {self.file}:{self.line} {self.severity} {self.rule}>"


class Problem:
    """A file the audit could not follow: file, line and reason."""

    __slots__ = ("file", "line", "reason")

    def __init__(self, file: str, line: int, reason: str) -> None:
        self.file = file
        self.line = line
        self.reason = reason

    @property
    def message(self) -> str:
        """``cannot parse near line N: reason``."""
        return f"cannot parse near line {self.line}: {self.reason}"

    def as_dict(self) -> dict[str, object]:
        """The JSON shape: file, line, message."""
        return {"file": self.file, "line": self.line, "message": self.message}

    def __repr__(self) -> str:
        return f"<Problem {self.file}:{self.line} {self.reason}>"


def internal(exc: BaseException) -> str:
    return f"the audit failed here ({type(exc).__name__}: {exc}); please report it"


class Policy:
    """One rule: its name, default severity (error, warning, info) and what it reports."""

    __slots__ = ("description", "name", "severity")

    def __init__(self, name: str, severity: str, description: str) -> None:
        self.name = name
        self.severity = severity
        self.description = description

    def finding(
        self, file: str, line: int, message: str, suggestion: str, severity: str = ""
    ) -> Finding:
        """A finding of this rule, at its default severity unless *severity* is given."""
        return Finding(file, line, self.name, message, suggestion, severity or self.severity)

    def __repr__(self) -> str:
        return f"<Policy {self.name} ({self.severity})>"
