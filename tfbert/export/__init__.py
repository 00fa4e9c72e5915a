"""SavedModel export for TF Serving."""

from tfbert.export.saved_model import (
    export_saved_model, export_task_model, next_version)
from tfbert.export.serving_module import (
    EXPORT_PRECISIONS, TEXT_SIGNATURE, TOKEN_IDS_SIGNATURE, RequestLimits,
    ServingModule, serving_model)
from tfbert.export.task_models import export_for_serving, serving_module_of
from tfbert.export.serving_ops import (
    check_serving_ops, saved_model_ops, unservable_ops)
from tfbert.export.warmup import build_predict_request, write_warmup_requests
