"""What a trained model looks like to a person: its report, one
self-contained HTML page (``model_report``; docs/report.md), the factor
graph of an instance as a picture (``draw``, ``draw_layout``,
``draw_render``), its weights ranked (``inspect``) or listed (``dump``).

Nothing is imported here: ``fgl inspect`` loads no drawing, and a report
loads its parts when it is built.
"""
