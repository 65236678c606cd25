"""``python -m fgl.learn.trainers > docs/settings.md``: the settings page,
generated from the settings, trainer and inference-method tables."""
from fgl.learn.trainers import settings_doc

print(settings_doc(), end="")
