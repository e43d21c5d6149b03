from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("stateroom.api_urls")),
    path("", include("console_app.urls")),
]

handler404 = "stateroom.views.handler404"
handler500 = "stateroom.views.handler500"
handler403 = "stateroom.views.handler403"
