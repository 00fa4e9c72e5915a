"""Writing the `.keras` fixtures of the old-files tests (the
`write_fixtures.py` scripts, run against an older checkout)."""

import os
import zipfile


def save_deflated(model, out, name):
    """`model.save` as `out/name.keras`, its members kept as Keras wrote
    them in an archive re-written deflated (Keras stores them uncompressed)
    to keep the fixture small."""
    stored = os.path.join(out, name + ".stored.keras")
    model.save(stored)
    with zipfile.ZipFile(stored) as source, zipfile.ZipFile(
            os.path.join(out, name + ".keras"), "w", zipfile.ZIP_DEFLATED,
            compresslevel=9) as deflated:
        for member in source.infolist():
            deflated.writestr(member.filename, source.read(member.filename))
    os.remove(stored)
