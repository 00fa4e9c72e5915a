"""TF Serving warmup requests (`assets.extra/tf_serving_warmup_requests`)."""

import os

import tensorflow as tf


def build_predict_request(model_name, signature_name, inputs):
    """A `tensorflow_serving.apis.PredictRequest` for `inputs` (dict of input
    name -> numpy array or list)."""
    from tensorflow_serving.apis import predict_pb2

    request = predict_pb2.PredictRequest()
    request.model_spec.name = model_name
    request.model_spec.signature_name = signature_name
    for name, value in inputs.items():
        request.inputs[name].CopyFrom(tf.make_tensor_proto(value))
    return request


def write_warmup_requests(path, model_name, inputs_by_signature):
    """Writes a `PredictionLog` per request in TFRecord format, as TF
    Serving reads them at load time: `inputs_by_signature` maps each
    signature name to its request's inputs, or to a list of requests."""
    from tensorflow_serving.apis import prediction_log_pb2

    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tf.io.TFRecordWriter(path) as writer:
        for signature_name, requests in inputs_by_signature.items():
            for inputs in (requests if isinstance(requests, list)
                           else [requests]):
                log = prediction_log_pb2.PredictionLog(
                    predict_log=prediction_log_pb2.PredictLog(
                        request=build_predict_request(
                            model_name, signature_name, inputs)))
                writer.write(log.SerializeToString())
