"""Import every command module so each registers itself on the app."""
from . import ls  # noqa: F401
from . import analyze  # noqa: F401
from . import replay  # noqa: F401
from . import check  # noqa: F401
from . import stitch  # noqa: F401
from . import export  # noqa: F401
from . import version  # noqa: F401
from . import watch  # noqa: F401
