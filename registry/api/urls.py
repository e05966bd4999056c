from django.urls import path

from registry.api import protocol, submissions, tokens

urlpatterns = [
    path("submissions", submissions.SubmissionCollectionApi.as_view(), name="api-submissions"),
    path("submissions/<int:run_id>", submissions.SubmissionDetailApi.as_view(), name="api-submission-detail"),
    path("submissions/<int:run_id>/document", submissions.SubmissionDocumentApi.as_view(),
         name="api-submission-document"),
    path("tokens", tokens.TokenCollectionApi.as_view(), name="api-tokens"),
    path("tokens/<int:token_id>", tokens.TokenRevokeApi.as_view(), name="api-token-revoke"),
    path("protocol", protocol.ProtocolApi.as_view(), name="api-protocol"),
]
